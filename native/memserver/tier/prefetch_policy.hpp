// prefetch_policy.hpp — the contract between the SSD tier and its server-side prefetchers (none,
// next-n, best-offset, leap; docs/tier.md): the tier reports each page access of a region, the
// policy names pages of that region worth bringing into DRAM before they are asked for.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pd3::tier {

// The prefetchers the tier offers (--tier-prefetch).
enum class PrefetchKind : uint8_t { kNone, kNextN, kBestOffset, kLeap };

// Settings of the prefetchers; each reads the ones it uses.
struct PrefetchOptions {
  uint32_t next_n = 4;        // next-n: pages after a miss
  uint32_t max_window = 8;    // leap: largest window; best-offset: prefetch degree 1 (the paper's)
};

// One page access, as the tier saw it.
struct PageAccess {
  uint32_t region = 0;        // the region's global id: each region is one access stream
  uint64_t page = 0;          // page index within the region
  uint64_t region_pages = 0;  // pages in the region: candidates are below this
  bool miss = false;          // the page was not in DRAM (a demand miss)
  bool prefetched = false;    // it was in DRAM because a prefetch brought it, and this is its first use
};

// Names pages to prefetch. Called from one thread (the tier's owner).
class PrefetchPolicy {
 public:
  virtual ~PrefetchPolicy() = default;
  virtual PrefetchKind kind() const = 0;
  // Records `access` and appends the pages of access.region worth prefetching to *out (each below
  // access.region_pages, the accessed page excluded; the tier skips pages already in DRAM).
  virtual void on_access(const PageAccess& access, std::vector<uint64_t>* out) = 0;
  // The region was freed: forget its stream.
  virtual void forget(uint32_t region) = 0;
};

// A prefetcher; nullptr-free: kNone gives a policy that never names a page.
std::unique_ptr<PrefetchPolicy> make_prefetch_policy(PrefetchKind kind, const PrefetchOptions& options);

// "none", "next-n", "best-offset", "leap"; parse_prefetch_kind returns false for any other name.
const char* prefetch_kind_name(PrefetchKind kind);
bool parse_prefetch_kind(const std::string& name, PrefetchKind* out);

}  // namespace pd3::tier
