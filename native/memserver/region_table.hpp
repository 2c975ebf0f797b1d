// region_table.hpp — the regions of one memory server: global ids (pd3/transport.h: server bits |
// local 1..PD3_REGION_LOCAL_MAX), the tenant owning each, capacity accounting, each region's memory
// (anonymous, or a file in the data directory: "region-<local>.pd3" for the default tenant,
// "region-<local>@<tenant>.pd3" otherwise, so a region's owner is fixed by the rename that creates
// it) and the bytes written since the last sync.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "memserver/data_dir.hpp"
#include "memserver/mapping.hpp"
#include "pd3/transport.h"

namespace pd3 {

// Where a region stands in a move to another server (pd3/wire.h PD3_CTL_FREEZE/SEAL/THAW).
enum class MoveState : uint8_t {
  kNone,    // served as usual
  kFrozen,  // being copied: WRITEs are refused PD3_E_MOVED so the copy misses none, READs served
  kSealed,  // copied; its name is being (or was) switched: every access is refused PD3_E_MOVED
};

// One allocated region.
struct Region {
  uint32_t id = 0;        // global region id
  uint32_t capacity = 0;  // bytes, a multiple of RegionTable::kAlign
  std::string tenant;     // the owner: only its connections may touch the region ("" = default tenant)
  uint64_t last_use = 0;  // the store's request count at its last access: smaller is colder
  bool given_back = false;  // its memory was given back to the machine: reads may come from the file
  MoveState move = MoveState::kNone;  // kSealed survives a restart (RegionTable::set_move); kFrozen does not
  uint64_t accesses = 0;  // READs, WRITEs and PREFETCH hits served from it: the heat the pool's migrator reads
  Mapping memory;         // exactly `capacity` bytes are used; empty in a tiered table
  UniqueFd file;          // a tiered table's region: its backing file, handed to the tier
  uint64_t dirty_lo = UINT64_MAX;  // [dirty_lo, dirty_hi): written since the last sync (durable only)
  uint64_t dirty_hi = 0;
  uint8_t* bytes() const { return memory.data(); }
};

// One region's access count, for the pool's heat measurement (memserver/heat.ts turns counts into rates).
struct RegionHeat {
  uint32_t id = 0;
  uint32_t capacity = 0;
  std::string tenant;
  uint64_t accesses = 0;
  MoveState move = MoveState::kNone;
};

// What one tenant holds on a server.
struct TenantUsage {
  std::string tenant;
  uint64_t regions = 0;
  uint64_t bytes = 0;
};

// All regions of a server. Single-threaded.
class RegionTable {
 public:
  static constexpr uint32_t kAlign = 4096;             // region capacities are multiples of this
  static constexpr uint32_t kMaxCapacity = 0xFFFFF000u;  // largest multiple of kAlign offsets (u32) reach

  // `dir`: nullptr for anonymous regions; else regions are files in it (not owned, must outlive this).
  // `tiered` (needs a dir): the files are not mapped; each region's `file` is left for the SSD tier.
  RegionTable(uint16_t server_id, uint64_t capacity, DataDir* dir, bool tiered = false)
      : server_id_(server_id), capacity_(capacity), dir_(dir), tiered_(tiered) {}

  // Maps back every region file of the data directory. Returns PD3_OK, PD3_E_CORRUPT (a region
  // file whose size cannot be a region's) or PD3_E_SYS.
  int load();

  // The region with this global id, or nullptr (another server's id, local 0, not allocated).
  Region* find(uint32_t id) const;

  // Allocates a region of `bytes` rounded up to kAlign for `tenant`, with the lowest free local
  // id. Returns PD3_OK, PD3_E_INVAL (0 bytes, or more than kMaxCapacity after rounding),
  // PD3_E_NOSPACE (over the server's capacity, no free id, or a full disk), PD3_E_NOMEM or PD3_E_SYS.
  [[nodiscard]] int allocate(uint32_t bytes, const std::string& tenant, Region** out);
  // Releases a region, its memory and its file. Returns PD3_OK, PD3_E_BAD_REGION or PD3_E_SYS.
  [[nodiscard]] int deallocate(uint32_t id);
  // Global ids of every region `tenant` owns, in id order.
  std::vector<uint32_t> regions_of(const std::string& tenant) const;
  // Regions and bytes per tenant that owns any, in name order.
  std::vector<TenantUsage> usage() const;
  // Gives `region`'s memory back to the machine (Mapping::give_back): its pages are written to its
  // file, so nothing of it is left for sync(), and dropped from memory; sets *released to the bytes
  // that left. Returns PD3_OK, PD3_E_INVAL (anonymous) or PD3_E_SYS.
  [[nodiscard]] int give_back(Region* region, uint64_t* released);
  // Every region's access count, in id order.
  std::vector<RegionHeat> heat() const;
  // Every region, coldest (smallest last_use) first.
  std::vector<Region*> coldest_first() const;

  // Sets `region`'s move state. With a data directory a sealed region keeps a marker file next to
  // its own ("<region file>.sealed"), so a restarted server still refuses it: its name may already
  // name the copy elsewhere, and a write here would be lost. Returns PD3_OK or PD3_E_SYS (the state
  // is unchanged then).
  [[nodiscard]] int set_move(Region* region, MoveState next);
  // Records that [lo, hi) of `region` was written (kept only when the data directory is durable).
  void mark_written(Region* region, uint64_t lo, uint64_t hi);
  // msyncs the written range of every region written since the last call; adds the msync calls
  // made to *flushes. Returns PD3_OK or PD3_E_SYS (unsynced ranges stay pending for a retry).
  int sync(uint64_t* flushes);

  uint64_t count() const { return count_; }
  uint64_t allocated_bytes() const { return allocated_; }
  uint64_t capacity() const { return capacity_; }

  // The file of region `local` owned by `tenant`; parse_file_name gives the local id of such a
  // name and sets *tenant, or returns 0 for any other name.
  static std::string file_name(uint32_t local, const std::string& tenant);
  static uint32_t parse_file_name(const std::string& name, std::string* tenant);

 private:
  bool durable() const { return dir_ != nullptr && dir_->durable() && !tiered_; }
  void add(std::unique_ptr<Region> region);

  uint16_t server_id_;
  uint64_t capacity_;
  DataDir* dir_;
  bool tiered_;
  // By local id, as long as the highest local id in use so far (never shrinks); [0] unused. Sized
  // by use rather than by PD3_REGION_LOCAL_MAX, so a server with few regions keeps a short table.
  std::vector<std::unique_ptr<Region>> regions_ = std::vector<std::unique_ptr<Region>>(1);
  std::vector<uint32_t> free_locals_;  // min-heap of the unused local ids below regions_.size()
  std::vector<uint32_t> dirty_;  // local ids written since the last sync (may repeat or be gone)
  uint64_t count_ = 0;
  uint64_t allocated_ = 0;
};

}  // namespace pd3
