// placement.cpp — see placement.hpp.
#include "common/placement.hpp"

#include <cassert>

namespace pd3 {

bool parse_placement_policy(std::string_view name, PlacementPolicy* out) {
  if (name == "p2c") {
    *out = PlacementPolicy::kPowerOfTwo;
  } else if (name == "most-free") {
    *out = PlacementPolicy::kMostFree;
  } else if (name == "random") {
    *out = PlacementPolicy::kRandom;
  } else {
    return false;
  }
  return true;
}

std::string_view placement_policy_name(PlacementPolicy policy) {
  switch (policy) {
    case PlacementPolicy::kPowerOfTwo:
      return "p2c";
    case PlacementPolicy::kMostFree:
      return "most-free";
    case PlacementPolicy::kRandom:
      return "random";
  }
  return "?";
}

Placement::Placement(PlacementPolicy policy, uint64_t refraction_ns, uint64_t seed)
    : policy_(policy), refraction_ns_(refraction_ns), rng_(seed) {}

int Placement::pick(std::span<const PlacementCandidate> servers, uint64_t excluded, uint64_t need, uint64_t now_ns) {
  assert(servers.size() <= kMaxPlacementServers);
  if (refracted_until_.size() < servers.size()) refracted_until_.resize(servers.size(), 0);
  eligible_.clear();
  bool skipped = false;  // a refracted server was passed over in the first pass
  int pass = 0;
  for (; pass < 2 && eligible_.empty(); ++pass) {
    for (size_t i = 0; i < servers.size(); ++i) {
      const PlacementCandidate& s = servers[i];
      if (!s.up || !live(i) || (excluded >> i & 1u) || s.free_bytes < need) continue;
      if (pass == 0 && now_ns < refracted_until_[i]) {
        skipped = true;
        continue;
      }
      eligible_.push_back(int(i));
    }
  }
  if (eligible_.empty()) return -1;
  if (skipped && pass == 1) ++refraction_skips_;  // chosen elsewhere because of a refraction
  const auto more_free = [&](int a, int b) { return servers[size_t(a)].free_bytes > servers[size_t(b)].free_bytes; };
  switch (policy_) {
    case PlacementPolicy::kMostFree: {
      int best = eligible_[0];
      for (int i : eligible_) if (more_free(i, best)) best = i;
      return best;
    }
    case PlacementPolicy::kRandom:
      return eligible_[uniform(eligible_.size())];
    case PlacementPolicy::kPowerOfTwo: {
      const size_t n = eligible_.size();
      if (n == 1) return eligible_[0];
      const size_t a = uniform(n);
      size_t b = uniform(n - 1);
      if (b >= a) ++b;  // two distinct servers
      // Ties go to the first draw, itself uniform: no server is favoured by its index.
      return more_free(eligible_[b], eligible_[a]) ? eligible_[b] : eligible_[a];
    }
  }
  return -1;
}

void Placement::refused(size_t index, uint64_t now_ns) {
  if (refracted_until_.size() <= index) refracted_until_.resize(index + 1, 0);
  refracted_until_[index] = now_ns + refraction_ns_;
}

void Placement::set_live(size_t index, bool live) {
  if (left_.size() <= index) {
    if (live) return;  // an index beyond the list is live already
    left_.resize(index + 1, 0);
  }
  left_[index] = live ? 0 : 1;
}

void Placement::reset(size_t index) {
  set_live(index, true);
  if (index < refracted_until_.size()) refracted_until_[index] = 0;
}

uint64_t Placement::next_random() {
  // splitmix64: a full-period stream, plenty for choosing among servers.
  uint64_t z = (rng_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

size_t Placement::uniform(size_t n) {
  assert(n > 0);
  // Multiply-shift: unbiased enough for n ≤ 64 (bias below 2^-58).
  return size_t((static_cast<unsigned __int128>(next_random()) * n) >> 64);
}

}  // namespace pd3
