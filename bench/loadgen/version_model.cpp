// version_model.cpp — the bookkeeping of version_model.hpp.
#include "version_model.hpp"

#include <algorithm>

namespace pd3::loadgen {

void VersionModel::reset(uint64_t records, uint64_t initial) {
  stable_.assign(records, initial);
  active_.clear();
  pool_.clear();
  free_.clear();
  clock_ = 2;
}

void VersionModel::add_record(uint64_t key) {
  if (key >= stable_.size()) stable_.resize(key + 1, kAbsent);
}

VersionModel::Busy& VersionModel::busy(uint64_t key) {
  const auto [it, inserted] = active_.try_emplace(key, 0);
  if (!inserted) return pool_[it->second];
  uint32_t index;
  if (!free_.empty()) {
    index = free_.back();
    free_.pop_back();
  } else {
    index = uint32_t(pool_.size());
    pool_.emplace_back();
  }
  it->second = index;
  Busy& b = pool_[index];
  b.writes.clear();
  b.reads.clear();
  b.writes.push_back({stable_[key], 0, 1, true});
  b.max_acked_send = 0;
  return b;
}

ReadTicket VersionModel::begin_read(uint64_t key) {
  Busy& b = busy(key);
  b.reads.push_back(b.max_acked_send);
  ++clock_;
  return b.max_acked_send;
}

bool VersionModel::finish_read(uint64_t key, ReadTicket t, const std::string_view* got, ValueFormat& values,
                               std::vector<uint64_t>* possible) {
  const auto it = active_.find(key);
  if (it == active_.end()) return false;  // a read nobody began: a caller bug, reported as a mismatch
  const uint32_t index = it->second;
  Busy& b = pool_[index];
  ++clock_;
  bool ok = false;
  for (const Write& w : b.writes) {
    if (w.acked != 0 && w.acked <= t) continue;  // overruled before the read was sent
    if (got == nullptr ? w.version == kAbsent : values.matches(key, w.version, *got)) {
      ok = true;
      break;
    }
  }
  if (!ok && possible != nullptr) {
    possible->clear();
    for (const Write& w : b.writes) {
      if (w.acked == 0 || w.acked > t) possible->push_back(w.version);
    }
  }
  (void)end_read(key, t);
  settle(key, index);
  return ok;
}

uint32_t VersionModel::end_read(uint64_t key, ReadTicket t) {
  const auto it = active_.find(key);
  if (it == active_.end()) return UINT32_MAX;
  Busy& b = pool_[it->second];
  const auto r = std::find(b.reads.begin(), b.reads.end(), t);
  if (r != b.reads.end()) {
    *r = b.reads.back();
    b.reads.pop_back();
  }
  return it->second;
}

void VersionModel::abandon_read(uint64_t key, ReadTicket t) {
  ++clock_;
  const uint32_t index = end_read(key, t);
  if (index != UINT32_MAX) settle(key, index);
}

void VersionModel::begin_write(uint64_t key, uint64_t version) {
  Busy& b = busy(key);
  b.writes.push_back({version, ++clock_, 0, false});
}

void VersionModel::finish_write(uint64_t key, uint64_t version, bool applied) {
  const auto it = active_.find(key);
  if (it == active_.end()) return;
  const uint32_t index = it->second;
  Busy& b = pool_[index];
  ++clock_;
  for (auto w = b.writes.rbegin(); w != b.writes.rend(); ++w) {
    if (w->version != version || w->acked != 0) continue;
    w->acked = clock_;
    w->may_overrule = applied;
    if (applied) b.max_acked_send = std::max(b.max_acked_send, w->sent);
    break;
  }
  settle(key, index);
}

void VersionModel::settle(uint64_t key, uint32_t index) {
  Busy& b = pool_[index];
  // A write acknowledged before `floor` is overruled for every read in flight and every later one.
  uint64_t floor = b.max_acked_send;
  for (ReadTicket t : b.reads) floor = std::min(floor, t);
  std::erase_if(b.writes, [floor](const Write& w) { return w.acked != 0 && w.acked < floor; });
  if (!b.reads.empty() || b.writes.size() != 1 || b.writes[0].acked == 0) return;
  stable_[key] = b.writes[0].version;
  active_.erase(key);
  free_.push_back(index);
}

}  // namespace pd3::loadgen
