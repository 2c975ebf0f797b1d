// eviction_factory.cpp — make_eviction_policy and the --evict names (eviction_policy.hpp).
#include <cassert>

#include "memserver/tier/eviction_cflru.hpp"
#include "memserver/tier/eviction_epoch.hpp"
#include "memserver/tier/eviction_fifo.hpp"
#include "memserver/tier/eviction_lru.hpp"
#include "memserver/tier/eviction_policy.hpp"
#include "memserver/tier/eviction_random.hpp"

namespace pd3::tier {

namespace {

struct Named {
  EvictionKind kind;
  const char* name;
};
constexpr Named kNames[] = {
    {EvictionKind::kLru, "lru"},     {EvictionKind::kFifo, "fifo"},   {EvictionKind::kRandom, "random"},
    {EvictionKind::kCflru, "cflru"}, {EvictionKind::kEpoch, "epoch"},
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_eviction_policy(EvictionKind kind, uint32_t frames, const EvictionOptions& options) {
  assert(frames >= 1);
  switch (kind) {
    case EvictionKind::kLru: return std::make_unique<LruPolicy>(frames);
    case EvictionKind::kFifo: return std::make_unique<FifoPolicy>(frames);
    case EvictionKind::kRandom: return std::make_unique<RandomPolicy>(frames, options.seed);
    case EvictionKind::kCflru: return std::make_unique<CflruPolicy>(frames, options.cflru_window);
    case EvictionKind::kEpoch: return std::make_unique<EpochPolicy>(frames, options, /*start_sampler=*/true);
  }
  assert(!"unknown EvictionKind");
  return std::make_unique<LruPolicy>(frames);
}

const char* eviction_kind_name(EvictionKind kind) {
  for (const Named& n : kNames)
    if (n.kind == kind) return n.name;
  return "unknown";
}

bool parse_eviction_kind(const std::string& name, EvictionKind* out) {
  for (const Named& n : kNames) {
    if (name == n.name) {
      *out = n.kind;
      return true;
    }
  }
  return false;
}

}  // namespace pd3::tier
