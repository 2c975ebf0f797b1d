// frame_registrations.cpp — see frame_registrations.hpp.
#include "memserver/tier/frame_registrations.hpp"

#include <cassert>
#include <cstdio>
#include <cstring>
#include <utility>

#include "memserver/tier/frame_pool.hpp"

namespace pd3::tier {

FrameRegistrations::FrameRegistrations(uint64_t capacity_bytes) {
  mrrc::Config config;
  config.capacity_bytes = size_t(capacity_bytes);
  config.replacement = mrrc::Replacement::kMre;
  const mrrc::Result r = mrrc::RegionCache::create(config, pinner_, &cache_);
  if (!r.ok()) {
    char why[160];
    std::snprintf(why, sizeof why, "no registration cache: %llu bytes capped to RLIMIT_MEMLOCK (%zu) leave less than one page",
                  (unsigned long long)capacity_bytes, pinner_.pin_limit());
    no_cache_ = why;
  }
}

FrameRegistrations::~FrameRegistrations() = default;

void FrameRegistrations::attach(FramePool& pool) {
  handles_.assign(pool.frames(), 0);
  pool.observer.filled = [this](FrameId f, uint8_t* addr, uint32_t len) { filled(f, addr, len); };
  pool.observer.emptied = [this](FrameId f, uint8_t*, uint32_t) { emptied(f); };
}

void FrameRegistrations::filled(FrameId f, uint8_t* addr, uint32_t len) {
  assert(f < handles_.size() && handles_[f] == 0);  // a frame fills once between empties
  if (!cache_) {
    refused(no_cache_.c_str());
    return;
  }
  mrrc::Handle h = 0;
  const mrrc::Result r = cache_->acquire(addr, len, &h);
  if (!r.ok()) {
    char why[160];
    std::snprintf(why, sizeof why, "frame %u (%u bytes) not registered: %s%s%s", unsigned(f), unsigned(len),
                  mrrc::status_name(r.status), r.sys_errno ? ", " : "", r.sys_errno ? std::strerror(r.sys_errno) : "");
    refused(why);
    return;
  }
  handles_[f] = h;
}

void FrameRegistrations::emptied(FrameId f) {
  assert(f < handles_.size());
  // kUnknownHandle cannot happen (each handle is released once, here); an MRE cache deregisters
  // nothing on release.
  if (const mrrc::Handle h = std::exchange(handles_[f], 0); h != 0) (void)cache_->release(h);
}

void FrameRegistrations::refused(const char* why) {
  ++failures_;
  if (told_) return;
  told_ = true;
  notices_.push_back(std::string(why) + " (TCP needs none; further refusals are only counted in pd3_memserver_tier_mr_failures_total)");
}

FrameRegistrationStats FrameRegistrations::stats() const {
  FrameRegistrationStats s;
  s.failures = failures_;
  if (!cache_) return s;
  const mrrc::Stats c = cache_->stats();
  s.hits = c.hits;
  s.misses = c.misses + c.partial_hits;
  s.deregistrations = c.deregistrations;
  s.pinned_bytes = c.pinned_bytes;
  return s;
}

}  // namespace pd3::tier
