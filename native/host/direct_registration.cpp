// direct_registration.cpp — see direct_registration.hpp.
#include "host/direct_registration.hpp"

#include "common/atomics.hpp"
#include "mrrc/mlock_pinner.hpp"

namespace pd3 {
namespace {

// mlock's pin counts are process-wide: one backend serves every handle's cache.
mrrc::MlockPinner& backend() {
  static mrrc::MlockPinner pinner;
  return pinner;
}

void add(uint64_t& counter, int64_t delta) {
  if (delta == 0) return;  // a locked add of nothing still takes the line from other writers
  // relaxed: a statistic; handles of several threads add to it, readers only report it.
  aref(counter).fetch_add(uint64_t(delta), std::memory_order_relaxed);
}

}  // namespace

std::unique_ptr<DirectRegistrations> DirectRegistrations::make(uint64_t capacity_bytes, pd3_control* control) {
  mrrc::Config config;
  config.capacity_bytes = capacity_bytes ? capacity_bytes : kDefaultBytes;
  config.replacement = mrrc::Replacement::kMre;
  std::unique_ptr<mrrc::RegionCache> cache;
  if (!mrrc::RegionCache::create(config, backend(), &cache).ok()) return nullptr;
  return std::unique_ptr<DirectRegistrations>(new DirectRegistrations(std::move(cache), control));
}

DirectRegistrations::~DirectRegistrations() {
  std::lock_guard lock(mu_);
  publish_hits(cache_->stats().hits);  // the last ones, below kPublishEvery
  cache_.reset();
  add(control_->host_mr_pinned_bytes, -int64_t(published_.pinned_bytes));
}

void DirectRegistrations::publish_hits(uint64_t hits) {
  // relaxed: published_hits_ only decides which caller adds which share of the hits; the shared
  // counter itself is a statistic. Of two callers with counts h1 < h2, whichever runs second sees
  // the other's value: the total added is the largest count seen, never a hit twice.
  uint64_t old = published_hits_.load(std::memory_order_relaxed);
  while (old < hits && !published_hits_.compare_exchange_weak(old, hits, std::memory_order_relaxed)) {
  }
  if (old < hits) add(control_->host_mr_hits, int64_t(hits - old));
}

void DirectRegistrations::publish_locked() {
  const mrrc::Stats now = cache_->stats();
  publish_hits(now.hits);
  add(control_->host_mr_misses,
      int64_t(now.misses + now.partial_hits - published_.misses - published_.partial_hits));
  add(control_->host_mr_registrations, int64_t(now.registrations - published_.registrations));
  add(control_->host_mr_pinned_bytes, int64_t(now.pinned_bytes) - int64_t(published_.pinned_bytes));
  published_ = now;
}

uint64_t DirectRegistrations::acquire(const void* addr, size_t len) {
  mrrc::Handle h = 0;
  bool hit = false;
  mrrc::Tally tally;
  const mrrc::Result r = cache_->acquire(addr, len, &h, &hit, &tally);
  if (hit) {  // the common case after warm-up: nothing was registered, the cache counted the hit
    if (tally.hits % kPublishEvery == 0) publish_hits(tally.hits);
    return h;
  }
  std::lock_guard lock(mu_);
  publish_locked();
  if (!r.ok()) {
    add(control_->host_mr_failures, 1);
    return 0;
  }
  return h;
}

void DirectRegistrations::release(uint64_t handle) {
  // kUnknownHandle cannot happen (each handle is released once, by finish or close); an MRE cache
  // deregisters nothing on release, so only hits can be left to publish.
  mrrc::Tally tally;
  if (cache_->release(handle, &tally).ok() && tally.handles == 0) publish_hits(tally.hits);
}

void count_unregistered(pd3_control* control) { add(control->host_mr_failures, 1); }

}  // namespace pd3
