// async_miss_path.cpp — preparing a batch's reads and taking them.
#include "async_miss_path.hpp"

namespace pd3::hashmap {

CandidateRead* AsyncMissPath::next_read() {
  if (pool_used_ == pool_.size()) pool_.push_back(std::make_unique<CandidateRead>());
  return pool_[pool_used_++].get();
}

void AsyncMissPath::prepare(const std::vector<uint64_t>& keys) {
  prepared_.clear();
  pool_used_ = 0;
  IoThread::Batch batch;
  for (const uint64_t key : keys) {
    if (prepared_.count(key) != 0) continue;
    const KeyHash h = KeyHash::of(key);
    // Without the key's lock: a guess of what will miss. fetch() checks each read before use.
    if (cache_.contains(key, h)) continue;
    control_.candidates(h, &candidates_);
    if (candidates_.empty()) continue;
    CandidateRead* r = next_read();
    r->plan(key, candidates_, stripes_);
    prepared_.emplace(key, r);
    batch.reads.push_back(r);
  }
  if (!batch.reads.empty()) io_.run(&batch);
}

int AsyncMissPath::fetch(uint64_t key, KeyHash, const std::vector<uint64_t>& candidates, Found* found) {
  stats_.add(&Stats::remote_lookups);
  const auto it = prepared_.find(key);
  CandidateRead* r = it == prepared_.end() ? nullptr : it->second;
  if (r != nullptr && r->ticket().status == PD3_OK && r->still_valid(candidates, stripes_)) {
    stats_.add(&Stats::batched_lookups);
    prepared_.erase(it);  // used once: the key is cached after this operation
    *found = r->find();
    return PD3_OK;
  }
  // Not prepared (the cache had it then), or its slots changed since: read it now, alone.
  r = next_read();
  r->plan(key, candidates, stripes_);
  IoThread::Batch batch;
  batch.reads.push_back(r);
  io_.run(&batch);
  if (r->ticket().status != PD3_OK) {
    stats_.add(&Stats::remote_errors);
    return r->ticket().status;
  }
  *found = r->find();
  return PD3_OK;
}

}  // namespace pd3::hashmap
