// prefetch_simple.cpp — next-n (prefetch_simple.hpp).
#include "memserver/tier/prefetch_simple.hpp"

namespace pd3::tier {

void NextNPrefetch::on_access(const PageAccess& access, std::vector<uint64_t>* out) {
  if (!access.miss && !access.prefetched) return;  // a plain hit: the stream is not ahead of us
  for (uint64_t k = 1; k <= n_; k++) {
    const uint64_t page = access.page + k;
    if (page < access.page || page >= access.region_pages) break;  // past the region (or wrapped)
    out->push_back(page);
  }
}

}  // namespace pd3::tier
