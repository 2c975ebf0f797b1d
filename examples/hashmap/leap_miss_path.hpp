// leap_miss_path.hpp — the `leap` mode: a miss waits for a direct read (as in sync), and Leap's
// prefetcher (native/workloads/leap.hpp: majority trend over the miss slot numbers, adaptive
// window) picks slots to read ahead. Those reads run in the background on the worker's handle;
// between operations their records go into the local cache if still current.
#pragma once

#include <array>
#include <memory>

#include "leap.hpp"
#include "hash_table.hpp"
#include "read_miss_path.hpp"

namespace pd3::hashmap {

// Synchronous reads plus Leap prefetching of slots.
class LeapMissPath : public ReadMissPath {
 public:
  // `leap` decides; `table` and `worker` receive the prefetched records (worker.miss is this).
  LeapMissPath(HostChannel& channel, HashTable& table, WorkerContext& worker, std::unique_ptr<leap::Prefetcher> leap);
  // Waits for the prefetch reads still in flight (they write into this object).
  ~LeapMissPath() override;

  int fetch(uint64_t key, KeyHash h, const std::vector<uint64_t>& candidates, Found* found) override;
  void between_ops() override;
  void prefetch_used(uint64_t slot) override { leap_->record_hit(slot); }

 private:
  static constexpr size_t kMaxInFlight = 64;  // prefetch reads outstanding per worker

  // One slot read ahead.
  struct Prefetch {
    bool busy = false;
    uint64_t slot = 0;
    uint64_t writes = 0;  // the slot's write count when issued
    std::array<uint8_t, kSlotBytes> bytes{};
    ReadTicket ticket;
  };

  void issue(uint64_t slot);

  HashTable& table_;
  WorkerContext& worker_;
  std::unique_ptr<leap::Prefetcher> leap_;
  std::vector<uint64_t> picks_;  // scratch
  std::array<Prefetch, kMaxInFlight> inflight_;
};

}  // namespace pd3::hashmap
