// key_index_test.cpp — the memory server's key hash and key→address index: hash spread, put / find /
// erase against std::unordered_map over random operations with growth and tombstone rebuilds, the
// rebuild filter, the hand-off of a durable index's changes to a background fdatasync, and a
// 10M-key build (time and bytes per key printed).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "harness.hpp"
#include "memserver/key_hash.hpp"
#include "memserver/key_index.hpp"
#include "pd3/status.h"
#include "util.hpp"

namespace {

using pd3::KeyIndex;
using pd3::KeyIndexOptions;
using pd3::key_hash64;

std::unique_ptr<KeyIndex> make_index(uint64_t initial_keys) {
  KeyIndexOptions o;
  o.initial_keys = initial_keys;
  std::unique_ptr<KeyIndex> index;
  return KeyIndex::open(o, &index) == PD3_OK ? std::move(index) : nullptr;
}

// The hash of the 8 little-endian bytes of n.
uint64_t hash_of(uint64_t n) { return key_hash64(&n, sizeof n); }

}  // namespace

TEST(key_hash_is_stable_and_distinguishes_lengths) {
  // Stored in index files: the value for a fixed key must never change silently.
  const uint64_t h = key_hash64("user:1000", 9);
  CHECK_EQ(h, key_hash64(std::string("user:1000").data(), 9));
  const uint8_t zeros[32] = {};
  std::unordered_set<uint64_t> seen;
  for (size_t len = 1; len <= 32; ++len) seen.insert(key_hash64(zeros, len));  // zero padding ≠ length
  CHECK_EQ(seen.size(), size_t(32));
  CHECK(key_hash64("a", 1) != key_hash64("b", 1));
  CHECK(key_hash64("ab", 2) != key_hash64("ba", 2));
  // Swapping two 16-byte blocks must change the hash (block order matters).
  uint8_t key[32];
  for (int i = 0; i < 32; ++i) key[i] = uint8_t(i);
  uint8_t swapped[32];
  std::memcpy(swapped, key + 16, 16);
  std::memcpy(swapped + 16, key, 16);
  CHECK(key_hash64(key, 32) != key_hash64(swapped, 32));
}

TEST(key_hash_spreads_and_avalanches) {
  constexpr uint32_t kKeys = 1u << 20;
  constexpr uint32_t kBuckets = 1u << 12;
  std::vector<uint32_t> low(kBuckets), high(kBuckets);
  std::unordered_set<uint64_t> seen;
  seen.reserve(kKeys);
  uint64_t reserved = 0;
  for (uint64_t n = 0; n < kKeys; ++n) {
    const uint64_t h = hash_of(n);  // sequential keys: the worst case for a weak mix
    seen.insert(h);
    reserved += h < pd3::kKeyHashReserved;
    ++low[h & (kBuckets - 1)];  // the index probes by the low bits
    ++high[h >> 52];
  }
  CHECK_EQ(seen.size(), size_t(kKeys));
  CHECK_EQ(reserved, 0u);
  // 256 keys per bucket expected; a fair hash stays well within ±35% on 4096 buckets.
  uint32_t lo_min = UINT32_MAX, lo_max = 0, hi_min = UINT32_MAX, hi_max = 0;
  for (uint32_t b = 0; b < kBuckets; ++b) {
    lo_min = std::min(lo_min, low[b]), lo_max = std::max(lo_max, low[b]);
    hi_min = std::min(hi_min, high[b]), hi_max = std::max(hi_max, high[b]);
  }
  CHECK(lo_min > 166 && lo_max < 346);
  CHECK(hi_min > 166 && hi_max < 346);
  // Flipping one input bit flips about half the output bits, for every input bit position.
  pd3test::Rng rng(7);
  for (int bit = 0; bit < 24 * 8; ++bit) {
    uint64_t flipped = 0;
    constexpr int kTrials = 200;
    for (int t = 0; t < kTrials; ++t) {
      uint8_t key[24];
      for (auto& b : key) b = uint8_t(rng.next());
      const uint64_t a = key_hash64(key, sizeof key);
      key[bit / 8] ^= uint8_t(1u << (bit % 8));
      flipped += uint64_t(__builtin_popcountll(a ^ key_hash64(key, sizeof key)));
    }
    const double mean = double(flipped) / kTrials;
    if (mean < 29.0 || mean > 35.0) {
      std::fprintf(stderr, "  input bit %d flips %.2f output bits on average\n", bit, mean);
      CHECK(false);
    }
  }
}

TEST(key_index_put_find_erase) {
  auto index = make_index(16);
  REQUIRE(index != nullptr);
  CHECK_EQ(index->slots(), 64u);
  uint64_t addr = 0;
  CHECK(!index->find(hash_of(1), &addr));
  // Region ids are 32 bits (server 40000, local 65535 here): every bit survives the packing.
  CHECK_EQ(index->put(hash_of(1), pd3::pack_address(0x9C40FFFFu, 40)), PD3_OK);
  REQUIRE(index->find(hash_of(1), &addr));
  CHECK_EQ(pd3::address_region(addr), 0x9C40FFFFu);
  CHECK_EQ(pd3::address_offset(addr), 40u);
  CHECK_EQ(index->put(hash_of(1), pd3::pack_address(0xFFFF0001u, 0xFFFFFFF0u)), PD3_OK);  // update in place
  CHECK_EQ(index->keys(), 1u);
  REQUIRE(index->find(hash_of(1), &addr));
  CHECK_EQ(pd3::address_region(addr), 0xFFFF0001u);
  CHECK_EQ(pd3::address_offset(addr), 0xFFFFFFF0u);
  CHECK(index->erase(hash_of(1)));
  CHECK(!index->erase(hash_of(1)));
  CHECK(!index->find(hash_of(1), &addr));
  CHECK_EQ(index->keys(), 0u);
  // The slot markers 0 and 1 are still usable as hashes (stored as 2 and 3).
  CHECK_EQ(index->put(0, 7), PD3_OK);
  CHECK_EQ(index->put(1, 8), PD3_OK);
  CHECK(index->find(0, &addr) && addr == 7);
  CHECK(index->find(1, &addr) && addr == 8);
  // Bad options are refused.
  KeyIndexOptions bad;
  bad.initial_keys = 0;
  std::unique_ptr<KeyIndex> none;
  CHECK_EQ(KeyIndex::open(bad, &none), PD3_E_INVAL);
  bad.initial_keys = uint64_t(1) << 40;
  CHECK_EQ(KeyIndex::open(bad, &none), PD3_E_INVAL);
  CHECK(none == nullptr);
}

TEST(key_index_erase_keeps_probe_chains) {
  // Keys forced into one probe chain (same low bits): erasing from the middle must not cut off the
  // keys behind, and erasing the chain's tail must not leave tombstones behind.
  auto index = make_index(16);
  REQUIRE(index != nullptr);
  const uint64_t mask = index->slots() - 1;
  std::vector<uint64_t> chain;
  for (uint64_t n = 0; chain.size() < 8; ++n)
    if ((hash_of(n) & mask) == 5) chain.push_back(hash_of(n));
  for (size_t i = 0; i < chain.size(); ++i) CHECK_EQ(index->put(chain[i], i), PD3_OK);
  CHECK(index->erase(chain[2]));
  CHECK(index->erase(chain[4]));
  CHECK_EQ(index->tombstones(), 2u);
  uint64_t addr = 0;
  for (size_t i = 0; i < chain.size(); ++i) CHECK_EQ(index->find(chain[i], &addr), i != 2 && i != 4);
  CHECK(index->find(chain[7], &addr) && addr == 7);
  // Erasing the rest from the end clears every tombstone.
  for (size_t i = chain.size(); i-- > 0;)
    if (i != 2 && i != 4) CHECK(index->erase(chain[i]));
  CHECK_EQ(index->tombstones(), 0u);
  CHECK_EQ(index->keys(), 0u);
  // A tombstone is reused by the next new key on its chain.
  for (size_t i = 0; i < 3; ++i) CHECK_EQ(index->put(chain[i], i), PD3_OK);
  CHECK(index->erase(chain[0]));
  CHECK_EQ(index->tombstones(), 1u);
  CHECK_EQ(index->put(chain[5], 55), PD3_OK);
  CHECK_EQ(index->tombstones(), 0u);
  CHECK(index->find(chain[5], &addr) && addr == 55);
}

TEST(key_index_matches_unordered_map) {
  // ≥ 1M random operations from a tiny start: growth by doubling, rebuilds that clear tombstones
  // (an erase-heavy phase), and a key space larger than the live set.
  auto index = make_index(16);
  REQUIRE(index != nullptr);
  std::unordered_map<uint64_t, uint64_t> model;
  pd3test::Rng rng(42);
  pd3test::Errors errs{"index-model"};
  const uint64_t ops = 1200000 / pd3test::stress_scale();
  uint64_t grows = 0, last_slots = index->slots();
  for (uint64_t op = 0; op < ops; ++op) {
    const uint64_t phase = (op * 4) / ops;  // 0, 2: put-heavy; 1, 3: erase-heavy
    const uint32_t key_space = phase < 2 ? 200000 : 60000;
    const uint64_t h = hash_of(rng.below(key_space));
    const uint32_t dice = rng.below(100);
    const uint32_t put_share = phase % 2 == 0 ? 60 : 25;
    if (dice < put_share) {
      const uint64_t addr = rng.next() & 0xFFFFFFFFFFFFull;
      if (index->put(h, addr) != PD3_OK) errs.fail("put failed at op %llu", (unsigned long long)op);
      model[h] = addr;
    } else if (dice < put_share + 25) {
      const bool had = model.erase(h) == 1;
      if (index->erase(h) != had) errs.fail("erase disagrees at op %llu", (unsigned long long)op);
    } else {
      uint64_t addr = 0;
      const auto it = model.find(h);
      const bool found = index->find(h, &addr);
      if (found != (it != model.end()) || (found && addr != it->second))
        errs.fail("find disagrees at op %llu", (unsigned long long)op);
    }
    if (index->slots() != last_slots) ++grows, last_slots = index->slots();
    if (op % 4096 == 0 && index->keys() != model.size())
      errs.fail("keys %llu vs model %zu", (unsigned long long)index->keys(), model.size());
    // At most 3/4 of the slots are ever in use.
    if ((index->keys() + index->tombstones()) * 4 > index->slots() * 3) errs.fail("table over 3/4 full");
  }
  CHECK_EQ(errs.n, 0u);
  CHECK(grows >= 8);
  CHECK_EQ(index->keys(), model.size());
  uint64_t addr = 0;
  uint64_t wrong = 0;
  for (const auto& [h, a] : model) wrong += !index->find(h, &addr) || addr != a;
  CHECK_EQ(wrong, 0u);
}

TEST(key_index_rebuild_drops_rejected_entries) {
  // The store drops entries of deallocated regions whenever the table is rebuilt.
  KeyIndexOptions o;
  o.initial_keys = 16;
  o.keep = [](uint64_t address) { return pd3::address_region(address) != 0x2003; };
  std::unique_ptr<KeyIndex> index;
  REQUIRE(KeyIndex::open(o, &index) == PD3_OK);
  for (uint64_t n = 0; n < 40; ++n) CHECK_EQ(index->put(hash_of(n), pd3::pack_address(n % 2 ? 0x2003 : 0x2001, 0)), PD3_OK);
  CHECK_EQ(index->keys(), 40u);
  for (uint64_t n = 40; n < 60; ++n) CHECK_EQ(index->put(hash_of(n), pd3::pack_address(0x2001, 0)), PD3_OK);
  CHECK(index->slots() > 64);  // grew, dropping the 20 entries of region 0x2003
  CHECK_EQ(index->keys(), 40u);
  uint64_t addr = 0;
  for (uint64_t n = 0; n < 60; ++n) CHECK_EQ(index->find(hash_of(n), &addr), n >= 40 || n % 2 == 0);
}

namespace {

// The inode of an open descriptor, or of a path (0 if it cannot be stat-ed).
ino_t inode_of_fd(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 ? st.st_ino : 0;
}
ino_t inode_of_path(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

// A durable or non-durable data directory under /tmp, removed with its files at scope exit.
struct IndexDir {
  pd3test::TempDir temp{"index"};
  const std::string& path = temp.path;
  std::unique_ptr<pd3::DataDir> dir;  // after temp: closed before the directory is removed
  explicit IndexDir(bool durable) {
    REQUIRE(!path.empty());
    REQUIRE(pd3::DataDir::open(path, durable, &dir) == PD3_OK);
  }
};

}  // namespace

TEST(key_index_hands_off_changes_of_a_durable_file_only) {
  std::shared_ptr<const pd3::UniqueFd> file;
  // Anonymous memory, and a file in a directory that is not durable: nothing to hand off.
  auto anonymous = make_index(16);
  REQUIRE(anonymous != nullptr);
  CHECK_EQ(anonymous->put(hash_of(1), 7), PD3_OK);
  CHECK(!anonymous->hand_off_changes(&file));
  {
    IndexDir plain(false);
    KeyIndexOptions o;
    o.initial_keys = 16;
    o.dir = plain.dir.get();
    std::unique_ptr<KeyIndex> index;
    REQUIRE(KeyIndex::open(o, &index) == PD3_OK);
    CHECK_EQ(index->put(hash_of(1), 7), PD3_OK);
    CHECK(!index->hand_off_changes(&file));
  }
  IndexDir durable(true);
  const std::string index_path = durable.path + "/" + KeyIndex::kFileName;
  KeyIndexOptions o;
  o.initial_keys = 16;
  o.dir = durable.dir.get();
  {
    std::unique_ptr<KeyIndex> index;
    REQUIRE(KeyIndex::open(o, &index) == PD3_OK);
    CHECK(!index->hand_off_changes(&file));  // created complete: nothing changed yet
    CHECK_EQ(index->put(hash_of(1), 7), PD3_OK);
    REQUIRE(index->hand_off_changes(&file));
    REQUIRE(file != nullptr && file->valid());
    CHECK_EQ(inode_of_fd(file->get()), inode_of_path(index_path));
    CHECK(!index->hand_off_changes(&file));  // the changes went with the first hand-off
    // Erasing is a change too; so is an update in place.
    CHECK(index->erase(hash_of(1)));
    CHECK(index->hand_off_changes(&file));
    CHECK_EQ(index->put(hash_of(2), 8), PD3_OK);
    CHECK(index->hand_off_changes(&file));
    CHECK_EQ(index->put(hash_of(2), 9), PD3_OK);
    CHECK(index->hand_off_changes(&file));
    // Growth replaces the file: the hand-off names the new one, while the old descriptor a
    // background fdatasync may still hold stays open on the old (unlinked) file.
    const std::shared_ptr<const pd3::UniqueFd> before = file;
    const ino_t old_inode = inode_of_fd(before->get());
    for (uint64_t n = 10; n < 100; ++n) CHECK_EQ(index->put(hash_of(n), n), PD3_OK);
    CHECK(index->slots() > 64);
    REQUIRE(index->hand_off_changes(&file));
    CHECK(file != before);
    CHECK_EQ(inode_of_fd(file->get()), inode_of_path(index_path));
    CHECK(inode_of_fd(before->get()) == old_inode && old_inode != inode_of_path(index_path));
    // The changes reach the file through the mapping: fdatasync of the handed-off descriptor is
    // what makes them durable, and it succeeds on it.
    CHECK_EQ(fdatasync(file->get()), 0);
  }
  // Reopened: the file found is adopted, and its descriptor is what a hand-off gives.
  std::unique_ptr<KeyIndex> again;
  REQUIRE(KeyIndex::open(o, &again) == PD3_OK);
  uint64_t addr = 0;
  CHECK(again->find(hash_of(2), &addr) && addr == 9);
  CHECK(again->find(hash_of(99), &addr) && addr == 99);
  CHECK_EQ(again->put(hash_of(3), 3), PD3_OK);
  REQUIRE(again->hand_off_changes(&file));
  CHECK_EQ(inode_of_fd(file->get()), inode_of_path(index_path));
}

TEST(key_index_ten_million_keys) {
  // Tens of millions of keys must fit: build 10M from the default initial size (3 doublings), then
  // find every one, hashed as the store does.
  const uint64_t keys = 10000000 / pd3test::stress_scale();
  KeyIndexOptions o;  // initial_keys = 1 << 20, the MemStoreOptions default
  std::unique_ptr<KeyIndex> index;
  REQUIRE(KeyIndex::open(o, &index) == PD3_OK);
  // Binary 16-byte keys (a counter and a mix of it), made without formatting costs.
  const auto key_of = [](uint64_t n, uint8_t* key) {
    const uint64_t words[2] = {n, pd3test::mix64(n)};
    std::memcpy(key, words, 16);
  };
  const auto address_of = [](uint64_t n) { return pd3::pack_address(uint32_t(1 + n % 7), uint32_t(n * 16)); };
  uint8_t key[16];
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t failed = 0;
  for (uint64_t n = 0; n < keys; ++n) {
    key_of(n, key);
    failed += index->put(key_hash64(key, sizeof key), address_of(n)) != PD3_OK;
  }
  const double build_ms = pd3test::ms_since(t0);
  CHECK_EQ(failed, 0u);
  CHECK_EQ(index->keys(), keys);
  const auto t1 = std::chrono::steady_clock::now();
  uint64_t wrong = 0, addr = 0;
  for (uint64_t n = 0; n < keys; ++n) {
    key_of(n, key);
    wrong += !index->find(key_hash64(key, sizeof key), &addr) || addr != address_of(n);
  }
  const double find_ms = pd3test::ms_since(t1);
  CHECK_EQ(wrong, 0u);
  std::printf("  index: %llu keys built in %.0f ms (%.0f ns/key incl. growth), found in %.0f ms; %llu slots, %.1f bytes/key\n",
              (unsigned long long)keys, build_ms, build_ms * 1e6 / double(keys), find_ms,
              (unsigned long long)index->slots(), double(index->bytes()) / double(keys));
}
