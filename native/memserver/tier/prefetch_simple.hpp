// prefetch_simple.hpp — the two stateless prefetchers: none (never names a page) and next-n (the N
// pages after a demand miss or after the first use of a prefetched page, so a sequential stream
// keeps N pages ahead of itself).
#pragma once

#include "memserver/tier/prefetch_policy.hpp"

namespace pd3::tier {

// --tier-prefetch none.
class NoPrefetch final : public PrefetchPolicy {
 public:
  PrefetchKind kind() const override { return PrefetchKind::kNone; }
  void on_access(const PageAccess& /*access*/, std::vector<uint64_t>* /*out*/) override {}
  void forget(uint32_t /*region*/) override {}
};

// --tier-prefetch next-n: next-N-line, tagged (a prefetched page's first use triggers too).
class NextNPrefetch final : public PrefetchPolicy {
 public:
  explicit NextNPrefetch(uint32_t n) : n_(n) {}
  PrefetchKind kind() const override { return PrefetchKind::kNextN; }
  void on_access(const PageAccess& access, std::vector<uint64_t>* out) override;
  void forget(uint32_t /*region*/) override {}

 private:
  uint32_t n_;
};

}  // namespace pd3::tier
