// prefetch_factory.cpp — make_prefetch_policy and the --tier-prefetch names (prefetch_policy.hpp).
#include "memserver/tier/prefetch_best_offset.hpp"
#include "memserver/tier/prefetch_leap.hpp"
#include "memserver/tier/prefetch_policy.hpp"
#include "memserver/tier/prefetch_simple.hpp"

namespace pd3::tier {

namespace {

struct Named {
  PrefetchKind kind;
  const char* name;
};
constexpr Named kNames[] = {
    {PrefetchKind::kNone, "none"},
    {PrefetchKind::kNextN, "next-n"},
    {PrefetchKind::kBestOffset, "best-offset"},
    {PrefetchKind::kLeap, "leap"},
};

}  // namespace

std::unique_ptr<PrefetchPolicy> make_prefetch_policy(PrefetchKind kind, const PrefetchOptions& options) {
  switch (kind) {
    case PrefetchKind::kNone: break;
    case PrefetchKind::kNextN: return std::make_unique<NextNPrefetch>(options.next_n);
    case PrefetchKind::kBestOffset: return std::make_unique<BestOffsetPrefetch>();
    case PrefetchKind::kLeap: return std::make_unique<LeapPrefetch>(options.max_window);
  }
  return std::make_unique<NoPrefetch>();
}

const char* prefetch_kind_name(PrefetchKind kind) {
  for (const Named& n : kNames)
    if (n.kind == kind) return n.name;
  return "unknown";
}

bool parse_prefetch_kind(const std::string& name, PrefetchKind* out) {
  for (const Named& n : kNames) {
    if (name == n.name) {
      *out = n.kind;
      return true;
    }
  }
  return false;
}

}  // namespace pd3::tier
