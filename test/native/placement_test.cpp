// placement_test.cpp — where new regions go (common/placement.hpp): each policy's choice, exclusions
// and the room a retry needs, refraction after NOSPACE, servers that left the pool (not live), the
// names, and the balance each policy reaches over many allocations of mixed sizes.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/placement.hpp"
#include "harness.hpp"

namespace {

using pd3::Placement;
using pd3::PlacementCandidate;
using pd3::PlacementPolicy;

constexpr uint64_t kMs = 1'000'000;

// Servers of `capacity` bytes; allocations of `sizes` placed one after the other, each taken from
// the chosen server's free bytes. Returns max ÷ mean allocated bytes.
double imbalance(PlacementPolicy policy, size_t servers, const std::vector<uint64_t>& sizes, uint64_t seed) {
  std::vector<PlacementCandidate> c(servers, PlacementCandidate{true, 1ull << 40});
  std::vector<uint64_t> allocated(servers, 0);
  Placement p(policy, 0, seed);
  for (uint64_t size : sizes) {
    const int i = p.pick(c, 0, 0, 0);
    CHECK(i >= 0);
    c[size_t(i)].free_bytes -= size;
    allocated[size_t(i)] += size;
  }
  uint64_t sum = 0;
  for (uint64_t a : allocated) sum += a;
  return double(*std::max_element(allocated.begin(), allocated.end())) / (double(sum) / double(servers));
}

}  // namespace

TEST(placement_names_round_trip) {
  for (auto policy : {PlacementPolicy::kPowerOfTwo, PlacementPolicy::kMostFree, PlacementPolicy::kRandom}) {
    PlacementPolicy parsed;
    CHECK(pd3::parse_placement_policy(pd3::placement_policy_name(policy), &parsed));
    CHECK(parsed == policy);
  }
  PlacementPolicy out = PlacementPolicy::kRandom;
  CHECK(!pd3::parse_placement_policy("P2C", &out));
  CHECK(!pd3::parse_placement_policy("", &out));
  CHECK(out == PlacementPolicy::kRandom);  // untouched on failure
}

TEST(placement_most_free_takes_the_largest_eligible) {
  Placement p(PlacementPolicy::kMostFree, 0, 1);
  std::vector<PlacementCandidate> c = {{true, 10}, {true, 50}, {false, 90}, {true, 30}};
  CHECK_EQ(p.pick(c, 0, 0, 0), 1);           // server 2 is down
  CHECK_EQ(p.pick(c, 1u << 1, 0, 0), 3);     // 1 was tried
  CHECK_EQ(p.pick(c, 0, 40, 0), 1);          // a retry needing 40 bytes
  CHECK_EQ(p.pick(c, 1u << 1, 40, 0), -1);   // nobody else has 40
  std::vector<PlacementCandidate> none = {{false, 100}};
  CHECK_EQ(p.pick(none, 0, 0, 0), -1);
  CHECK_EQ(p.pick(std::vector<PlacementCandidate>{}, 0, 0, 0), -1);
}

TEST(placement_p2c_picks_the_freer_of_two_and_reaches_every_server) {
  Placement p(PlacementPolicy::kPowerOfTwo, 0, 7);
  std::vector<PlacementCandidate> c = {{true, 100}, {true, 200}, {true, 300}, {true, 400}};
  std::vector<int> chosen(4, 0);
  for (int i = 0; i < 60'000; ++i) ++chosen[size_t(p.pick(c, 0, 0, 0))];
  // The freer of two distinct uniform draws: server k (by rank, 0 = least free) wins when drawn
  // with one of the k below it: P = 2k / (n (n-1)) = 0, 1/6, 2/6, 3/6.
  CHECK_EQ(chosen[0], 0);
  CHECK(chosen[1] > 9'000 && chosen[1] < 11'000);
  CHECK(chosen[2] > 19'000 && chosen[2] < 21'000);
  CHECK(chosen[3] > 29'000 && chosen[3] < 31'000);
  // One eligible server: that one.
  CHECK_EQ(p.pick(c, 0b1011, 0, 0), 2);
}

TEST(placement_random_is_uniform_over_eligible_servers) {
  Placement p(PlacementPolicy::kRandom, 0, 9);
  std::vector<PlacementCandidate> c = {{true, 1}, {false, 1}, {true, 1}, {true, 1}, {true, 1}};
  std::vector<int> chosen(5, 0);
  for (int i = 0; i < 40'000; ++i) ++chosen[size_t(p.pick(c, 1u << 4, 0, 0))];
  CHECK_EQ(chosen[1], 0);
  CHECK_EQ(chosen[4], 0);
  for (size_t i : {0u, 2u, 3u}) CHECK(chosen[i] > 12'500 && chosen[i] < 14'200);
}

TEST(placement_refraction_skips_a_refused_server_until_it_ends) {
  Placement p(PlacementPolicy::kMostFree, 100 * kMs, 3);
  std::vector<PlacementCandidate> c = {{true, 500}, {true, 100}};
  CHECK_EQ(p.pick(c, 0, 0, 0), 0);
  p.refused(0, 10 * kMs);
  CHECK_EQ(p.pick(c, 0, 0, 20 * kMs), 1);     // resting
  CHECK_EQ(p.refraction_skips(), 1u);
  CHECK_EQ(p.pick(c, 0, 0, 109 * kMs), 1);
  CHECK_EQ(p.pick(c, 0, 0, 110 * kMs), 0);    // rested
  CHECK_EQ(p.refraction_skips(), 2u);
  // The only server that could take it is resting: it is asked anyway, and that is no skip.
  p.refused(0, 200 * kMs);
  CHECK_EQ(p.pick(c, 1u << 1, 0, 210 * kMs), 0);
  CHECK_EQ(p.pick(c, 0, 300, 210 * kMs), 0);  // 1 lacks the room a retry needs
  CHECK_EQ(p.refraction_skips(), 2u);
  // A refusal by a server index beyond the list so far is kept for when it appears.
  p.refused(5, 200 * kMs);
  std::vector<PlacementCandidate> six(6, PlacementCandidate{true, 10});
  six[5].free_bytes = 1000;
  CHECK(p.pick(six, 0, 0, 250 * kMs) != 5);
}

TEST(placement_never_places_on_a_server_that_left_the_pool) {
  for (auto policy : {PlacementPolicy::kPowerOfTwo, PlacementPolicy::kMostFree, PlacementPolicy::kRandom}) {
    Placement p(policy, 100 * kMs, 5);
    std::vector<PlacementCandidate> c = {{true, 100}, {true, 900}, {true, 300}};
    CHECK(p.live(1) && p.live(7));  // live until told otherwise, known index or not
    p.set_live(1, false);
    CHECK(!p.live(1) && p.live(0) && p.live(2));
    for (int i = 0; i < 2'000; ++i) CHECK(p.pick(c, 0, 0, 0) != 1);
    // Not even as a last resort: when only it could take the region, there is none.
    CHECK_EQ(p.pick(c, 0b101, 0, 0), -1);
    CHECK_EQ(p.pick(c, 0, 500, 0), -1);
    // Unlike refraction: a refracted live server is still the last resort, a left one is not.
    p.refused(0, 0);
    CHECK_EQ(p.pick(c, 1u << 2, 0, 10 * kMs), 0);
    // Back in the pool (same index): placeable again, and the most free by far.
    p.set_live(1, true);
    CHECK(p.live(1));
    CHECK_EQ(p.pick(c, 0, 500, 0), 1);
    bool chosen = false;
    for (int i = 0; i < 200 && !chosen; ++i) chosen = p.pick(c, 0, 0, 0) == 1;
    CHECK(chosen);
  }
  // A left server that is down stays out once it is up again; a reset slot (another server now)
  // is live and not refracted.
  Placement p(PlacementPolicy::kMostFree, 100 * kMs, 5);
  std::vector<PlacementCandidate> c = {{true, 100}, {false, 900}};
  p.set_live(1, false);
  c[1].up = true;
  CHECK_EQ(p.pick(c, 0, 0, 0), 0);
  p.refused(1, 0);
  p.reset(1);
  CHECK(p.live(1));
  CHECK_EQ(p.pick(c, 0, 0, 10 * kMs), 1);
  CHECK_EQ(p.refraction_skips(), 0u);
  // Setting an index far beyond the list leaves the others alone.
  p.set_live(40, false);
  CHECK(!p.live(40) && p.live(39) && p.live(1));
}

TEST(placement_p2c_balances_mixed_sizes_better_than_random) {
  // Mixed sizes: mostly small regions, some 16× larger, as a pool of tenants would ask.
  std::vector<uint64_t> sizes;
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 20'000; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    sizes.push_back((x % 10 == 0 ? 16u : 1u) * (1u << 20) * (1 + x % 4));
  }
  const double p2c = imbalance(PlacementPolicy::kPowerOfTwo, 16, sizes, 11);
  const double rnd = imbalance(PlacementPolicy::kRandom, 16, sizes, 11);
  const double most = imbalance(PlacementPolicy::kMostFree, 16, sizes, 11);
  CHECK(p2c < rnd);
  CHECK(p2c < 1.05);
  CHECK(rnd > 1.05);
  CHECK(most < 1.05);  // with one placer and exact free bytes, most-free is as even as it gets
}
