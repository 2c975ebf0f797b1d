// hint_table.hpp — the prefetch hints the agent handed to the host and is waiting to get back as
// PREFETCH requests (prefetch issuer "host", the paper's §6.2 comparison path): which prefetch id,
// for which server and key, until when. Single-threaded (the Transfer Engine's thread).
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "pd3/wire.h"

namespace pd3 {

// Outstanding hints by prefetch id, with a FIFO of deadlines (hints are given in time order, so
// the oldest deadline is always at the front).
class HintTable {
 public:
  HintTable() : slots_(PD3_MAX_INFLIGHT) {}

  // A hint for prefetch `id` (0..PD3_MAX_INFLIGHT-1) went to the host; it is due back by `deadline`.
  void add(uint32_t id, uint16_t server, uint64_t key_hash, uint64_t deadline) {
    Slot& s = slots_[id & PD3_ID_MASK];
    if (s.deadline == 0) ++outstanding_;
    s = Slot{deadline, key_hash, server};
    deadlines_.push_back(Due{deadline, uint16_t(id & PD3_ID_MASK)});
  }
  // The host sent the PREFETCH of a hint: true (and forgotten) if that hint is outstanding with
  // the same server and key; false for anything else (late, duplicated, or not ours).
  bool take(uint32_t id, uint16_t server, uint64_t key_hash) {
    Slot& s = slots_[id & PD3_ID_MASK];
    if (s.deadline == 0 || s.server != server || s.key_hash != key_hash) return false;
    s.deadline = 0;
    --outstanding_;
    return true;
  }
  // Calls fn(id, server) for every outstanding hint whose deadline is ≤ now, and forgets it.
  template <class Fn>
  void expire(uint64_t now, Fn&& fn) {
    while (!deadlines_.empty() && deadlines_.front().deadline <= now) {
      const Due d = deadlines_.front();
      deadlines_.pop_front();
      Slot& s = slots_[d.id];
      if (s.deadline != d.deadline) continue;  // taken already, or re-added with a later deadline
      s.deadline = 0;
      --outstanding_;
      fn(uint32_t(d.id), s.server);
    }
  }
  uint32_t outstanding() const { return outstanding_; }

 private:
  // One prefetch id's hint: deadline 0 = none outstanding.
  struct Slot {
    uint64_t deadline = 0;
    uint64_t key_hash = 0;
    uint16_t server = 0;
  };
  // A deadline in the FIFO (stale once its slot no longer has that deadline).
  struct Due {
    uint64_t deadline;
    uint16_t id;
  };
  std::vector<Slot> slots_;
  std::deque<Due> deadlines_;
  uint32_t outstanding_ = 0;
};

}  // namespace pd3
