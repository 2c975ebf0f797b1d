// prefetch_leap.cpp — Leap per region (prefetch_leap.hpp).
#include "memserver/tier/prefetch_leap.hpp"

#include <algorithm>
#include <cassert>

namespace pd3::tier {

LeapPrefetch::LeapPrefetch(uint32_t max_window) : max_window_(std::clamp<uint32_t>(max_window, 1, leap::kMaxWindow)) {}

LeapPrefetch::Stream* LeapPrefetch::stream(const PageAccess& access) {
  auto it = streams_.find(access.region);
  // A region id reused with another size (freed, then allocated again without forget) starts over.
  if (it != streams_.end() && it->second.region_pages == access.region_pages) return &it->second;
  leap::Options options;
  options.max_window = max_window_;
  options.address_limit = access.region_pages;
  std::unique_ptr<leap::Prefetcher> p;
  [[maybe_unused]] const int rc = leap::Prefetcher::create(options, &p);
  assert(rc == PD3_OK);  // every option is in range: defaults, a clamped window, a limit >= 1
  Stream& s = streams_[access.region];
  s = Stream{access.region_pages, std::move(p)};
  return &s;
}

void LeapPrefetch::on_access(const PageAccess& access, std::vector<uint64_t>* out) {
  if (access.region_pages == 0 || access.page >= access.region_pages) return;  // nothing to stay below
  if (!access.miss && !access.prefetched) return;
  Stream* s = stream(access);
  if (!access.miss) {
    s->leap->record_hit(access.page);
    return;
  }
  (void)s->leap->record_miss(access.page, &scratch_);
  out->insert(out->end(), scratch_.begin(), scratch_.end());
}

}  // namespace pd3::tier
