// key_index.hpp — the memory server's key→address index (docs/architecture.md §9): open addressing with
// linear probing over 16-byte slots {64-bit key hash, packed address}, at most 3/4 full, doubling
// when it would pass that; kept in anonymous memory, or in the file "index.pd3" of the data
// directory (a one-page header, then the slots) so that it survives a restart.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "common/unique_fd.hpp"
#include "memserver/data_dir.hpp"
#include "memserver/mapping.hpp"

namespace pd3 {

// Where a key's record starts: the global region id in bits 32..63, the byte offset in bits 0..31.
inline uint64_t pack_address(uint32_t region, uint32_t offset) { return (uint64_t(region) << 32) | offset; }
inline uint32_t address_region(uint64_t address) { return uint32_t(address >> 32); }
inline uint32_t address_offset(uint64_t address) { return uint32_t(address); }

// How a KeyIndex is built.
struct KeyIndexOptions {
  uint64_t initial_keys = 1u << 20;  // keys the first table holds before it grows (1..2^36)
  DataDir* dir = nullptr;            // nullptr: anonymous memory; else the index file lives here
  uint16_t server_id = 0;            // recorded in the index file; a file of another server is refused
  // Asked for every entry when the table is rebuilt (growth): entries it rejects are dropped, so
  // the addresses of deallocated regions do not pile up. Empty: keep everything.
  std::function<bool(uint64_t address)> keep;
};

// A map from 64-bit key hash to address. Hashes 0 and 1 are slot markers: they are stored as 2
// and 3 (a collision only loses a prefetch: the caller verifies the key at the address).
// Single-threaded.
class KeyIndex {
 public:
  static constexpr const char* kFileName = "index.pd3";

  // Builds an empty index; with options.dir, maps back the index file found there (or creates
  // one). Returns PD3_OK, PD3_E_INVAL (bad options, or a file made by another server id),
  // PD3_E_CORRUPT (file with a bad header, size or contents), PD3_E_NOMEM, PD3_E_NOSPACE or
  // PD3_E_SYS; pd3_last_error says why.
  static int open(const KeyIndexOptions& options, std::unique_ptr<KeyIndex>* out);

  // Sets the address of `hash`, adding it if absent (growing the table when needed). Returns
  // PD3_OK, or PD3_E_NOMEM / PD3_E_NOSPACE / PD3_E_SYS when a needed growth failed — the hash is
  // then absent from the index.
  int put(uint64_t hash, uint64_t address);
  // The address of `hash`, if present.
  bool find(uint64_t hash, uint64_t* address) const;
  // Removes `hash`; true if it was present.
  bool erase(uint64_t hash);
  // Removes every entry whose address `drop` accepts (one pass over the table; the slots become
  // tombstones, cleared by the next rebuild). Returns how many were removed.
  uint64_t erase_if(const std::function<bool(uint64_t address)>& drop);

  // In a durable data directory: writes what changed since the last call back to the file and
  // waits — one msync over the changed span, since each msync costs a journal commit while the
  // clean pages inside the span cost next to nothing; adds the msync calls made to *flushes.
  // Otherwise does nothing. Returns PD3_OK or PD3_E_SYS (the changes stay pending for a retry).
  int sync(uint64_t* flushes);
  // The same without waiting, for a caller that syncs files in the background (the SSD tier's group
  // commit): in a durable data directory, if anything changed since the last sync or hand-off, sets
  // *file to the index file's descriptor, forgets the changes and returns true. The changes are
  // durable once an fdatasync of *file completes: it writes back the pages changed through the
  // mapping, as msync does. Returns false when there is nothing to do.
  [[nodiscard]] bool hand_off_changes(std::shared_ptr<const UniqueFd>* file);

  uint64_t keys() const;
  uint64_t tombstones() const;
  uint64_t slots() const { return mask_ + 1; }
  uint64_t bytes() const { return memory_.bytes(); }

  ~KeyIndex() = default;

 private:
  struct Slot;
  struct Header;
  explicit KeyIndex(const KeyIndexOptions& options) : options_(options) {}

  int create_table(uint64_t slots, bool copy_entries);
  int adopt_file(Mapping memory, UniqueFd fd, uint64_t size);
  int rebuild();
  Header* header() const;
  Slot* table() const;
  void mark_dirty(uint64_t lo, uint64_t hi);
  void mark_slot_dirty(uint64_t i);
  void forget_changes();  // nothing changed since the file was last made durable (or handed off)

  KeyIndexOptions options_;
  bool track_dirty_ = false;  // the file is in a durable data directory: sync() has work to do
  Mapping memory_;
  std::shared_ptr<const UniqueFd> file_;  // memory_'s file (null for anonymous memory)
  uint64_t mask_ = 0;
  uint64_t dirty_lo_ = UINT64_MAX;
  uint64_t dirty_hi_ = 0;
};

}  // namespace pd3
