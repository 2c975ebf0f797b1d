// miss_path.hpp — the per-mode part of the hash map: how a worker finds a key that is not in the
// local cache (sync: one direct read; async: reads batched through the I/O thread; leap: a direct
// read plus Leap's prefetches; pd3-noprefetch: a read through the agent; pd3: checkAndReturn, then a
// read through the agent). The table (hash_table.cpp) decides when to call it.
#pragma once

#include <cstdint>
#include <vector>

#include "candidate_read.hpp"
#include "key_hash.hpp"

namespace pd3::hashmap {

// A worker's way to resolve local misses.
class MissPath {
 public:
  virtual ~MissPath() = default;

  // Before the operations of one received batch run, holding no lock: the batch's keys.
  virtual void prepare(const std::vector<uint64_t>& keys) { (void)keys; }

  // Holding the key's stripe lock: finds `key` among `candidates` (its control-byte matches,
  // non-empty, in probe order). PD3_OK (found->present says whether it is there), or the negative
  // pd3_status of a remote failure.
  virtual int fetch(uint64_t key, KeyHash h, const std::vector<uint64_t>& candidates, Found* found) = 0;

  // Between operations, holding no lock: work that finished in the background.
  virtual void between_ops() {}

  // A cache hit on a record a prefetch brought in (first use of it).
  virtual void prefetch_used(uint64_t slot) { (void)slot; }
};

}  // namespace pd3::hashmap
