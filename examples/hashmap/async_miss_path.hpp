// async_miss_path.hpp — the `async` mode's miss path: before a received batch runs, the reads of
// every key of it that will miss go to the I/O thread together and the worker waits once for all;
// then the operations run in order, each miss taking its prepared read if no write touched its
// slots since (else one more read through the I/O thread).
#pragma once

#include <memory>
#include <unordered_map>

#include "control_bytes.hpp"
#include "io_thread.hpp"
#include "miss_path.hpp"
#include "record_cache.hpp"

namespace pd3::hashmap {

// Batched, pipelined reads through the I/O thread.
class AsyncMissPath : public MissPath {
 public:
  AsyncMissPath(IoThread& io, const ControlBytes& control, RecordCache& cache, const Stripes& stripes, Stats& stats)
      : io_(io), control_(control), cache_(cache), stripes_(stripes), stats_(stats) {}

  void prepare(const std::vector<uint64_t>& keys) override;
  int fetch(uint64_t key, KeyHash h, const std::vector<uint64_t>& candidates, Found* found) override;

 private:
  // A read from the pool (kept between batches for their buffers).
  CandidateRead* next_read();

  IoThread& io_;
  const ControlBytes& control_;
  RecordCache& cache_;
  const Stripes& stripes_;
  Stats& stats_;
  std::vector<std::unique_ptr<CandidateRead>> pool_;
  size_t pool_used_ = 0;
  std::unordered_map<uint64_t, CandidateRead*> prepared_;  // key → its read in this batch
  std::vector<uint64_t> candidates_;                       // scratch
};

}  // namespace pd3::hashmap
