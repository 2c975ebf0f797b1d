// placement.hpp — which memory server a new region goes to: power of two choices by free bytes
// (the pool's default), the most free bytes, or uniformly at random; a server that refused an
// allocation for lack of room sits out a refraction period. Single-threaded (the Transfer
// Engine's thread, or under the host's direct-mode lock). docs/pool.md "Placement".
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "pd3/host.h"

namespace pd3 {

// How the candidate is chosen among the eligible servers.
// The values are the PD3_PLACEMENT_* of pd3/host.h, the host library's config for direct mode.
enum class PlacementPolicy : uint8_t {
  kPowerOfTwo = PD3_PLACEMENT_P2C,     // two distinct servers uniformly at random; the one with more free bytes
  kMostFree = PD3_PLACEMENT_MOST_FREE, // the one with the most free bytes (every agent agrees: they pile onto it)
  kRandom = PD3_PLACEMENT_RANDOM,      // uniformly at random
};
// The largest PD3_PLACEMENT_* value.
inline constexpr uint32_t kMaxPlacementPolicy = PD3_PLACEMENT_RANDOM;
// Most servers one placement chooses among (an agent's or a direct-mode host's): pick() takes the
// servers already tried as a 64-bit mask. Server ids are not bounded by it (they reach 65,535).
inline constexpr size_t kMaxPlacementServers = 64;

// The policy named `name` ("p2c", "most-free", "random"); false if there is none.
[[nodiscard]] bool parse_placement_policy(std::string_view name, PlacementPolicy* out);
// The policy's name, as parse_placement_policy takes it.
std::string_view placement_policy_name(PlacementPolicy policy);

// One server as placement sees it, indexed like the engine's links.
struct PlacementCandidate {
  bool up = false;
  uint64_t free_bytes = 0;
};

// Placement state: the policy, its random stream, each server's refraction deadline and whether it
// is live (in the pool: placeable).
class Placement {
 public:
  // `refraction_ns`: how long a server that answered NOSPACE is skipped. `seed` fixes the random
  // stream (tests and benchmarks; the engine seeds it from the clock).
  Placement(PlacementPolicy policy, uint64_t refraction_ns, uint64_t seed);

  // The index in `servers` of the server to try, or -1 when none is up and live outside `excluded`
  // (a bitmask of indexes already tried) with at least `need` free bytes (0: any). Servers in
  // their refraction period are chosen only when no other is eligible: refraction steers
  // allocations away from a full server, it never fails one that only it could serve. A server
  // that is not live is never chosen, even when no other could take the region.
  // Precondition: servers.size() <= kMaxPlacementServers.
  [[nodiscard]] int pick(std::span<const PlacementCandidate> servers, uint64_t excluded, uint64_t need, uint64_t now_ns);

  // Server `index` answered NOSPACE at `now_ns`: skip it until now_ns + refraction.
  void refused(size_t index, uint64_t now_ns);

  // Server `index` joined (true) or left (false) the pool. Every server is live until told
  // otherwise; the flag outlasts connections: a live server that is down is placed again once up.
  void set_live(size_t index, bool live);
  // Whether server `index` may get new regions (true for an index never set).
  [[nodiscard]] bool live(size_t index) const { return index >= left_.size() || left_[index] == 0; }
  // Server `index` is a different server now (its slot was reused): live, and not refracted.
  void reset(size_t index);

  PlacementPolicy policy() const { return policy_; }
  // Picks that avoided a server because it was refracted.
  uint64_t refraction_skips() const { return refraction_skips_; }

 private:
  uint64_t next_random();
  // Index into `eligible` drawn uniformly.
  size_t uniform(size_t n);

  PlacementPolicy policy_;
  uint64_t refraction_ns_;
  uint64_t rng_;
  uint64_t refraction_skips_ = 0;
  std::vector<uint64_t> refracted_until_;  // by server index; 0 = never refused
  std::vector<uint8_t> left_;              // by server index; 1 = left the pool (not live)
  std::vector<int> eligible_;              // scratch, reused by pick()
};

}  // namespace pd3
