// host_abi_test.cpp — the libpd3host C ABI end to end against an in-process agent thread serving a memory model.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "dpu/agent_session.hpp"
#include "common/atomics.hpp"
#include "harness.hpp"
#include "pd3/host.h"
#include "util.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// An agent built from AgentSession: takes requests from the ring and serves them from local byte
// vectors (region ids from 1), bounds-checked like a memory server. Runs on its own thread.
class TestAgent {
 public:
  std::atomic<bool> paused{false};      // stop taking requests (responses already owed still go out)
  std::atomic<uint64_t> answered{0};    // responses published
  std::atomic<uint64_t> taken{0};       // requests taken from the ring
  std::atomic<uint64_t> corrupt_seen{0};

  explicit TestAgent(const std::string& name) { ok_ = pd3::AgentSession::attach(name.c_str(), &session_) == PD3_OK; }
  ~TestAgent() { stop(); }
  bool ok() const { return ok_; }
  pd3::AgentSession& session() { return *session_; }

  void start() {
    stop_.store(false);
    thread_ = std::thread([this] { run(); });
  }
  void stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  // One serving pass on the caller's thread (for tests without the agent thread).
  void pass() { step(); }

 private:
  struct Owed {
    uint16_t op_id;
    int status;
    uint32_t size;
    std::vector<uint8_t> data;
  };

  void run() {
    while (!stop_.load(std::memory_order_relaxed)) {
      session_->beat();
      if (!step()) std::this_thread::yield();
    }
  }

  // Returns true if it did any work.
  bool step() {
    bool worked = false;
    while (!owed_.empty()) {
      const Owed& o = owed_.front();
      const int rc = session_->respond(o.op_id, o.status, o.data.data(), o.size);
      if (rc == PD3_E_AGAIN) return worked;  // the host has not polled yet
      owed_.pop_front();
      answered.fetch_add(1, std::memory_order_release);
      worked = true;
    }
    if (paused.load(std::memory_order_acquire)) return worked;
    const int n = session_->take_requests(1024, [&](const pd3::RequestView& v) { serve(v); });
    if (n > 0) taken.fetch_add(uint64_t(n), std::memory_order_relaxed);
    return worked || n > 0;
  }

  bool region_ok(uint32_t r) const { return r != 0 && r < regions_.size() && live_[r]; }

  void serve(const pd3::RequestView& v) {
    const uint32_t op = pd3_op_of(v.hdr.op_id);
    Owed o{v.hdr.op_id, PD3_OK, 0, {}};
    if (v.status != PD3_OK) {
      corrupt_seen.fetch_add(1, std::memory_order_relaxed);
      o.status = v.status;
    } else if (op == PD3_OP_READ || op == PD3_OP_WRITE) {
      const uint32_t r = v.hdr.region;
      if (!region_ok(r)) {
        o.status = PD3_E_BAD_REGION;
      } else if (uint64_t(v.hdr.offset) + v.hdr.size > regions_[r].size()) {
        o.status = PD3_E_RANGE;
      } else if (op == PD3_OP_READ) {
        o.size = v.hdr.size;
        o.data.assign(regions_[r].begin() + v.hdr.offset, regions_[r].begin() + v.hdr.offset + v.hdr.size);
      } else {
        std::memcpy(regions_[r].data() + v.hdr.offset, v.payload, v.hdr.size);
        o.size = v.hdr.size;
      }
    } else if (op == PD3_OP_CONTROL && v.hdr.region == PD3_CTL_ALLOCATE) {
      if (v.hdr.size > (64u << 20) || regions_.size() >= 0xFFFF) {
        o.status = PD3_E_NOSPACE;
      } else {
        if (regions_.empty()) regions_.emplace_back(), live_.push_back(false);  // id 0 is never a region
        regions_.emplace_back(v.hdr.size, uint8_t(0));
        live_.push_back(true);
        const pd3_alloc_reply reply{uint32_t(regions_.size() - 1), v.hdr.size};
        o.size = sizeof reply;
        o.data.resize(sizeof reply);
        std::memcpy(o.data.data(), &reply, sizeof reply);
      }
    } else if (op == PD3_OP_CONTROL && v.hdr.region == PD3_CTL_DEALLOCATE) {
      const uint32_t r = v.hdr.offset;
      if (!region_ok(r)) {
        o.status = PD3_E_BAD_REGION;
      } else {
        live_[r] = false;
        regions_[r].clear();
        regions_[r].shrink_to_fit();
      }
    } else {
      o.status = PD3_E_BAD_OP;
    }
    owed_.push_back(std::move(o));
  }

  bool ok_ = false;
  std::unique_ptr<pd3::AgentSession> session_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::deque<Owed> owed_;
  std::vector<std::vector<uint8_t>> regions_;
  std::vector<bool> live_;
};

// Polls `h` until `done()` or a generous deadline (a guard against hangs, not a synchronisation).
template <class OnCompletion, class Done>
bool poll_until(pd3_host* h, OnCompletion&& on, Done&& done, int seconds = 20) {
  const auto deadline = Clock::now() + std::chrono::seconds(seconds);
  pd3_completion buf[64];
  while (!done()) {
    const int n = pd3_host_poll(h, buf, 64);
    if (n < 0) return false;
    for (int i = 0; i < n; ++i) on(buf[i]);
    if (n == 0) {
      if (Clock::now() > deadline) return false;
      std::this_thread::yield();
    }
  }
  return true;
}

// Allocates a region through the ABI and waits for it; returns the region id or 0.
uint32_t allocate(pd3_host* h, uint32_t bytes) {
  const int id = pd3_host_allocate(h, bytes, 0xA110C);
  if (id < 0) return 0;
  pd3_completion got{};
  bool have = false;
  if (!poll_until(h, [&](const pd3_completion& c) { got = c, have = true; }, [&] { return have; })) return 0;
  if (got.status != PD3_OK || got.user_data != 0xA110C || got.op != PD3_OP_CONTROL || got.size != bytes ||
      got.id != id)
    return 0;
  return got.region;
}

std::vector<uint8_t> random_bytes(std::mt19937& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = uint8_t(rng());
  return v;
}

// One request issued by a test and what its completion must say.
struct Expect {
  int id;
  uint16_t op;
  int status;
  uint32_t size;
  std::vector<uint8_t> want;       // READ: expected bytes
  std::unique_ptr<uint8_t[]> dest;  // READ destination
};

// Issues random reads and writes (and some invalid ones) on `h` against `model`, checking every
// completion; runs until `count` requests have completed. `tag` goes in the top byte of user_data.
void random_traffic(pd3_host* h, std::map<uint32_t, std::vector<uint8_t>>& model, int count, uint64_t tag,
                    uint32_t seed, uint64_t* errors_checked = nullptr) {
  std::mt19937 rng(seed);
  std::unordered_map<uint64_t, Expect> pending;
  std::vector<uint32_t> regions;
  for (auto& [r, bytes] : model) regions.push_back(r);
  uint64_t next = 0;
  int completed = 0;
  uint64_t errors = 0;
  const auto on = [&](const pd3_completion& c) {
    auto it = pending.find(c.user_data);
    if (it == pending.end()) {
      std::fprintf(stderr, "  unexpected completion user_data=%llx\n", (unsigned long long)c.user_data);
      CHECK(false);
      return;
    }
    Expect& e = it->second;
    CHECK_EQ(c.id, e.id);
    CHECK_EQ(c.op, e.op);
    CHECK_EQ(c.status, e.status);
    if (c.status == PD3_OK) {
      CHECK_EQ(c.size, e.size);
      if (e.op == PD3_OP_READ) CHECK(std::memcmp(e.dest.get(), e.want.data(), e.size) == 0);
    } else {
      ++errors;
    }
    pending.erase(it);
    ++completed;
  };
  pd3_completion buf[64];
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (completed < count) {
    if (next < uint64_t(count) && pending.size() < 512) {
      const uint32_t r = regions[rng() % regions.size()];
      std::vector<uint8_t>& mem = model[r];
      const uint32_t cap = uint32_t(mem.size());
      const uint32_t kind = rng() % 20;
      uint32_t region = r;
      uint32_t size = 1 + rng() % std::min<uint32_t>(cap, 8192);
      uint32_t offset = rng() % (cap - size + 1);
      int status = PD3_OK;
      if (kind == 0) region = 0x7777, status = PD3_E_BAD_REGION;
      if (kind == 1) offset = cap - size + 1 + rng() % 64, status = PD3_E_RANGE;
      if (kind == 2) offset = 0xFFFFFFF0u, size = 32, status = PD3_E_RANGE;  // offset + size wraps in 32 bits
      const bool is_read = rng() % 2;
      const uint64_t ud = (tag << 56) | next;
      Expect e{-1, uint16_t(is_read ? PD3_OP_READ : PD3_OP_WRITE), status, size, {}, nullptr};
      int id;
      std::vector<uint8_t> data;
      if (is_read) {
        e.dest.reset(new uint8_t[size]);
        id = pd3_host_read(h, region, offset, size, e.dest.get(), ud);
      } else {
        data = random_bytes(rng, size);
        id = pd3_host_write(h, region, offset, data.data(), size, ud);
      }
      if (id == PD3_E_AGAIN || id == PD3_E_INFLIGHT) {
        // Back-pressure: nothing was issued; poll and retry with fresh randomness.
      } else {
        REQUIRE(id >= 0 && id < int(PD3_MAX_INFLIGHT));
        e.id = id;
        // Ring order is issue order, so the model is updated at issue time.
        if (status == PD3_OK) {
          if (is_read)
            e.want.assign(mem.begin() + offset, mem.begin() + offset + size);
          else
            std::memcpy(mem.data() + offset, data.data(), size);
        }
        pending.emplace(ud, std::move(e));
        ++next;
        continue;
      }
    }
    const int n = pd3_host_poll(h, buf, 64);
    REQUIRE(n >= 0);
    for (int i = 0; i < n; ++i) on(buf[i]);
    if (n == 0) {
      REQUIRE(Clock::now() < deadline);
      std::this_thread::yield();
    }
  }
  CHECK(pending.empty());
  if (errors_checked) *errors_checked = errors;
}

pd3_host_config config_for(const std::string& name, pd3_segment_sizes sizes = {}, uint32_t timeout_ms = 0,
                           uint32_t publish_batch = 0) {
  pd3_host_config cfg{};
  cfg.name = name.c_str();
  cfg.sizes = sizes;
  cfg.agent_timeout_ms = timeout_ms;
  cfg.publish_batch = publish_batch;
  return cfg;
}

// Creates a segment and an agent for it; closes both at scope exit.
struct Rig {
  std::string name = pd3test::unique_name("abi");
  pd3_host* h = nullptr;
  std::unique_ptr<TestAgent> agent;
  explicit Rig(pd3_segment_sizes sizes = {}, uint32_t timeout_ms = 0, uint32_t publish_batch = 0) {
    const pd3_host_config cfg = config_for(name, sizes, timeout_ms, publish_batch);
    if (pd3_host_create(&cfg, &h) != PD3_OK) return;
    agent = std::make_unique<TestAgent>(name);
    if (!agent->ok()) agent.reset();
  }
  ~Rig() {
    if (agent) agent->stop();
    pd3_host_close(h);
  }
  bool ok() const { return h != nullptr && agent != nullptr; }
  const pd3_control* c() const { return pd3_host_control(h); }
};

}  // namespace

TEST(host_random_reads_and_writes_match_a_model) {
  Rig rig;
  REQUIRE(rig.ok());
  rig.agent->start();
  std::map<uint32_t, std::vector<uint8_t>> model;
  for (uint32_t bytes : {65536u, 4096u, 1u << 20, 100u}) {
    const uint32_t r = allocate(rig.h, bytes);
    REQUIRE(r != 0);
    CHECK(model.count(r) == 0);  // distinct ids
    model[r] = std::vector<uint8_t>(bytes, 0);
  }
  uint64_t errors = 0;
  random_traffic(rig.h, model, 20000, 1, 42, &errors);
  CHECK(errors > 1000);  // the invalid requests were answered with their statuses
  CHECK_EQ(pd3_host_inflight(rig.h), 0u);

  // Read every region back whole and compare with the model.
  for (auto& [r, bytes] : model) {
    const uint32_t chunk = 8192;
    for (uint32_t off = 0; off < bytes.size(); off += chunk) {
      const uint32_t n = std::min<uint32_t>(chunk, uint32_t(bytes.size()) - off);
      std::vector<uint8_t> dest(n);
      REQUIRE(pd3_host_read(rig.h, r, off, n, dest.data(), off) >= 0);
      bool done = false;
      REQUIRE(poll_until(rig.h, [&](const pd3_completion& c) {
        CHECK_EQ(c.status, PD3_OK);
        CHECK_EQ(c.user_data, off);
        done = true;
      }, [&] { return done; }));
      CHECK(std::memcmp(dest.data(), bytes.data() + off, n) == 0);
    }
  }
  // Deallocate: the region is gone afterwards; an unknown region is refused.
  const uint32_t victim = model.begin()->first;
  REQUIRE(pd3_host_deallocate(rig.h, victim, 1) >= 0);
  REQUIRE(pd3_host_deallocate(rig.h, 0x4242, 2) >= 0);
  uint8_t tmp[8];
  REQUIRE(pd3_host_read(rig.h, victim, 0, 8, tmp, 3) >= 0);
  std::map<uint64_t, pd3_completion> got;
  REQUIRE(poll_until(rig.h, [&](const pd3_completion& c) { got[c.user_data] = c; }, [&] { return got.size() == 3; }));
  CHECK_EQ(got[1].status, PD3_OK);
  CHECK_EQ(got[1].op, PD3_OP_CONTROL);
  CHECK_EQ(got[2].status, PD3_E_BAD_REGION);
  CHECK_EQ(got[3].status, PD3_E_BAD_REGION);
  // A failed allocation reports the memory server's status.
  REQUIRE(pd3_host_allocate(rig.h, 0x7FFFFFFF, 4) >= 0);
  got.clear();
  REQUIRE(poll_until(rig.h, [&](const pd3_completion& c) { got[c.user_data] = c; }, [&] { return got.size() == 1; }));
  CHECK_EQ(got[4].status, PD3_E_NOSPACE);

  rig.agent->stop();
  CHECK_EQ(rig.c()->host_requests, rig.c()->agent_requests);
  CHECK_EQ(rig.c()->host_responses, rig.c()->agent_responses);
  CHECK_EQ(rig.c()->agent_corrupt, 0u);
  CHECK_EQ(rig.agent->corrupt_seen.load(), 0u);
}

TEST(host_argument_checks_and_too_big) {
  Rig rig;
  REQUIRE(rig.ok());
  uint8_t buf[16];
  CHECK_EQ(pd3_host_read(rig.h, 1, 0, 0, buf, 0), PD3_E_INVAL);
  CHECK_EQ(pd3_host_read(rig.h, 1, 0, 8, nullptr, 0), PD3_E_INVAL);
  CHECK_EQ(pd3_host_write(rig.h, 1, 0, buf, 0, 0), PD3_E_INVAL);
  CHECK_EQ(pd3_host_write(rig.h, 1, 0, nullptr, 8, 0), PD3_E_INVAL);
  CHECK_EQ(pd3_host_allocate(rig.h, 0, 0), PD3_E_INVAL);
  CHECK_EQ(pd3_host_read(nullptr, 1, 0, 8, buf, 0), PD3_E_INVAL);
  CHECK_EQ(pd3_host_write(nullptr, 1, 0, buf, 8, 0), PD3_E_INVAL);
  CHECK_EQ(pd3_host_allocate(nullptr, 8, 0), PD3_E_INVAL);
  CHECK_EQ(pd3_host_deallocate(nullptr, 1, 0), PD3_E_INVAL);
  pd3_completion out[1];
  CHECK_EQ(pd3_host_poll(nullptr, out, 1), PD3_E_INVAL);
  CHECK_EQ(pd3_host_poll(rig.h, nullptr, 1), PD3_E_INVAL);
  CHECK_EQ(pd3_host_poll(rig.h, nullptr, 0), 0);
  CHECK_EQ(pd3_host_agent_alive(nullptr), 0);
  CHECK_EQ(pd3_host_inflight(nullptr), 0u);
  CHECK(pd3_host_control(nullptr) == nullptr);
  pd3_host_close(nullptr);  // a no-op

  // A read whose response could never fit the 4 MiB response ring (max slot 2 MiB).
  const uint32_t max_read = uint32_t(PD3_DEFAULT_RESPONSE_RING_BYTES / 2 - 16 - 8);
  std::vector<uint8_t> big(PD3_DEFAULT_RESPONSE_RING_BYTES / 2 + 64);
  CHECK_EQ(pd3_host_read(rig.h, 1, 0, max_read + 1, big.data(), 0), PD3_E_TOO_BIG);
  const int id = pd3_host_read(rig.h, 1, 0, max_read, big.data(), 0);
  CHECK(id >= 0);
  // A write that could never fit the 1 MiB request ring (max slot 512 KiB).
  const uint32_t max_write = uint32_t(PD3_DEFAULT_REQUEST_RING_BYTES / 2 - 16 - sizeof(pd3_request));
  CHECK_EQ(pd3_host_write(rig.h, 1, 0, big.data(), max_write + 1, 0), PD3_E_TOO_BIG);
  CHECK_EQ(pd3_host_inflight(rig.h), 1u);  // refused requests hold no id
  CHECK(pd3_host_write(rig.h, 1, 0, big.data(), max_write, 0) >= 0);
  CHECK_EQ(pd3_host_inflight(rig.h), 2u);
  CHECK_EQ(rig.c()->host_ring_full, 0u);
  // Let the agent answer (region 1 does not exist) so the read's destination is released.
  rig.agent->start();
  int done = 0;
  CHECK(poll_until(rig.h, [&](const pd3_completion& c) {
                     CHECK_EQ(c.status, PD3_E_BAD_REGION);
                     ++done;
                   },
                   [&] { return done == 2; }));
}

TEST(host_completions_are_routed_to_their_handle) {
  Rig rig;
  REQUIRE(rig.ok());
  rig.agent->start();
  const uint32_t r = allocate(rig.h, 1 << 16);
  REQUIRE(r != 0);
  pd3_host* h2 = nullptr;
  REQUIRE(pd3_host_attach(rig.name.c_str(), &h2) == PD3_OK);

  // Interleaved requests from both handles; only h1 polls at first.
  rig.agent->paused.store(true);
  uint8_t d1[10][8], d2[10][8];
  for (int i = 0; i < 10; ++i) {
    REQUIRE(pd3_host_read(rig.h, r, uint32_t(i * 8), 8, d1[i], 100 + i) >= 0);
    REQUIRE(pd3_host_read(h2, r, uint32_t(i * 8), 8, d2[i], 200 + i) >= 0);
  }
  REQUIRE(pd3_host_flush(h2) == PD3_OK);  // h1 publishes at its polls; h2 does not poll yet
  CHECK_EQ(pd3_host_inflight(rig.h), 10u);
  CHECK_EQ(pd3_host_inflight(h2), 10u);
  rig.agent->paused.store(false);
  std::vector<uint64_t> seen1;
  REQUIRE(poll_until(rig.h, [&](const pd3_completion& c) { seen1.push_back(c.user_data); },
                     [&] { return seen1.size() >= 10 && rig.agent->answered.load() >= 20; }));
  pd3_completion extra[4];
  CHECK_EQ(pd3_host_poll(rig.h, extra, 4), 0);
  REQUIRE(seen1.size() == 10);
  for (int i = 0; i < 10; ++i) CHECK_EQ(seen1[i], uint64_t(100 + i));  // in ring order
  CHECK_EQ(pd3_host_inflight(rig.h), 0u);
  // h2's completions were routed to h2's queue while h1 drained the ring.
  CHECK_EQ(pd3_host_inflight(h2), 0u);
  pd3_completion out[16];
  const int n = pd3_host_poll(h2, out, 16);
  REQUIRE(n == 10);
  for (int i = 0; i < 10; ++i) {
    CHECK_EQ(out[i].user_data, uint64_t(200 + i));
    CHECK_EQ(out[i].status, PD3_OK);
  }
  CHECK_EQ(pd3_host_poll(h2, out, 16), 0);

  // Two threads, one handle each, polling concurrently: each sees exactly its own completions.
  std::map<uint32_t, std::vector<uint8_t>> m1, m2;
  const uint32_t r1 = allocate(rig.h, 1 << 16), r2 = allocate(h2, 1 << 16);
  REQUIRE(r1 != 0 && r2 != 0 && r1 != r2);
  m1[r1] = std::vector<uint8_t>(1 << 16, 0);
  m2[r2] = std::vector<uint8_t>(1 << 16, 0);
  std::thread t2([&] {
    try {
      random_traffic(h2, m2, 8000, 2, 7);
    } catch (const pd3test::Abort&) {
    }
  });
  random_traffic(rig.h, m1, 8000, 1, 8);
  t2.join();
  CHECK_EQ(pd3_host_inflight(rig.h), 0u);
  CHECK_EQ(pd3_host_inflight(h2), 0u);
  pd3_host_close(h2);
}

TEST(host_inflight_limit_is_16384) {
  Rig rig;
  REQUIRE(rig.ok());
  rig.agent->start();
  const uint32_t r = allocate(rig.h, 1 << 20);
  REQUIRE(r != 0);
  // Fill the region with a known pattern.
  std::vector<uint8_t> pattern(1 << 20);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = uint8_t(i * 7 + (i >> 10));
  int writes = 0;
  const auto count_write = [&](const pd3_completion& c) {
    CHECK_EQ(c.status, PD3_OK);
    ++writes;
  };
  for (uint32_t off = 0; off < pattern.size(); off += 1 << 18) {
    // Four 256 KiB writes do not all fit the 1 MiB request ring at once: retry on back-pressure.
    int rc;
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while ((rc = pd3_host_write(rig.h, r, off, pattern.data() + off, 1 << 18, off)) == PD3_E_AGAIN) {
      pd3_completion out[4];
      const int n = pd3_host_poll(rig.h, out, 4);
      for (int i = 0; i < n; ++i) count_write(out[i]);
      REQUIRE(Clock::now() < deadline);
      std::this_thread::yield();
    }
    REQUIRE(rc >= 0);
  }
  REQUIRE(poll_until(rig.h, count_write, [&] { return writes == 4; }));

  rig.agent->paused.store(true);
  const uint64_t ring_full_before = rig.c()->host_ring_full;
  pd3_host* h2 = nullptr;
  REQUIRE(pd3_host_attach(rig.name.c_str(), &h2) == PD3_OK);
  std::vector<uint64_t> dest(PD3_MAX_INFLIGHT, 0);
  std::vector<bool> id_used(PD3_MAX_INFLIGHT, false);
  for (uint32_t i = 0; i < PD3_MAX_INFLIGHT; ++i) {
    const int id = pd3_host_read(rig.h, r, i * 8, 8, &dest[i], i);
    REQUIRE(id >= 0 && id < int(PD3_MAX_INFLIGHT));
    CHECK(!id_used[id]);
    id_used[id] = true;
  }
  CHECK_EQ(pd3_host_inflight(rig.h), PD3_MAX_INFLIGHT);
  uint64_t spare = 0;
  CHECK_EQ(pd3_host_read(rig.h, r, 0, 8, &spare, 1), PD3_E_INFLIGHT);
  CHECK_EQ(pd3_host_write(rig.h, r, 0, &spare, 8, 1), PD3_E_INFLIGHT);
  CHECK_EQ(pd3_host_allocate(rig.h, 64, 1), PD3_E_INFLIGHT);
  CHECK_EQ(pd3_host_deallocate(rig.h, r, 1), PD3_E_INFLIGHT);
  CHECK_EQ(pd3_host_read(h2, r, 0, 8, &spare, 1), PD3_E_INFLIGHT);  // the limit is per segment
  CHECK_EQ(pd3_host_inflight(rig.h), PD3_MAX_INFLIGHT);
  CHECK_EQ(pd3_host_inflight(h2), 0u);
  CHECK_EQ(rig.c()->host_ring_full, ring_full_before);  // refused for ids, not for ring space

  rig.agent->paused.store(false);
  std::vector<bool> done(PD3_MAX_INFLIGHT, false);
  uint32_t count = 0;
  REQUIRE(poll_until(rig.h, [&](const pd3_completion& c) {
    CHECK_EQ(c.status, PD3_OK);
    REQUIRE(c.user_data < PD3_MAX_INFLIGHT);
    CHECK(!done[c.user_data]);
    done[c.user_data] = true;
    ++count;
  }, [&] { return count == PD3_MAX_INFLIGHT; }));
  for (uint32_t i = 0; i < PD3_MAX_INFLIGHT; ++i) CHECK(std::memcmp(&dest[i], pattern.data() + i * 8, 8) == 0);
  CHECK_EQ(pd3_host_inflight(rig.h), 0u);
  // Ids are free again.
  const int id = pd3_host_read(h2, r, 0, 8, &spare, 9);
  CHECK(id >= 0);
  bool got = false;
  CHECK(poll_until(h2, [&](const pd3_completion& c) { got = c.user_data == 9 && c.status == PD3_OK; }, [&] { return got; }));
  pd3_host_close(h2);
}

TEST(host_tiny_request_ring_gives_back_pressure) {
  // publish_batch 1: each request is published at once or refused (host_batched_back_pressure
  // covers staging).
  Rig rig(pd3_segment_sizes{4096, 0, 0, 0, 0}, 0, 1);
  REQUIRE(rig.ok());
  rig.agent->start();
  const uint32_t r = allocate(rig.h, 1 << 16);
  REQUIRE(r != 0);
  rig.agent->paused.store(true);
  std::vector<uint8_t> model(1 << 16, 0);
  std::mt19937 rng(77);
  // 200-byte writes take 240-byte slots; how many fit depends on where the tail is (a slot that
  // would cross the end needs a PAD first).
  int expect = 0;
  {
    const uint64_t head = rig.c()->req_head;
    uint64_t tail = rig.c()->req_tail;
    REQUIRE(head == tail);
    for (;;) {
      const uint64_t off = tail & 4095, pad = off + 240 > 4096 ? 4096 - off : 0;
      if (tail + pad + 240 - head > 4096) break;
      tail += pad + 240;
      ++expect;
    }
  }
  int accepted = 0;
  int rc = 0;
  std::vector<uint8_t> data;
  for (;;) {
    data = random_bytes(rng, 200);
    const uint32_t off = uint32_t(accepted) * 200;
    rc = pd3_host_write(rig.h, r, off, data.data(), 200, uint64_t(accepted));
    if (rc < 0) break;
    std::memcpy(model.data() + off, data.data(), 200);
    ++accepted;
  }
  CHECK_EQ(rc, PD3_E_AGAIN);
  CHECK_EQ(accepted, expect);
  CHECK(accepted >= 16);
  CHECK_EQ(pd3_host_inflight(rig.h), uint32_t(accepted));  // the refused write holds no id
  CHECK_EQ(rig.c()->host_ring_full, 1u);
  CHECK_EQ(pd3_host_write(rig.h, r, 0, data.data(), 200, 999), PD3_E_AGAIN);
  CHECK_EQ(rig.c()->host_ring_full, 2u);

  // Once the agent drains, the ring accepts again; a writer that retries on AGAIN gets everything in.
  rig.agent->paused.store(false);
  int completed = 0, again = 0;
  const int total = 400;
  int next = accepted;
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  pd3_completion out[64];
  while (completed < total) {
    if (next < total) {
      data = random_bytes(rng, 200);
      const uint32_t off = uint32_t(next % 300) * 200;
      rc = pd3_host_write(rig.h, r, off, data.data(), 200, uint64_t(next));
      if (rc >= 0) {
        std::memcpy(model.data() + off, data.data(), 200);
        ++next;
        continue;
      }
      REQUIRE(rc == PD3_E_AGAIN);
      ++again;
    }
    const int n = pd3_host_poll(rig.h, out, 64);
    REQUIRE(n >= 0);
    for (int i = 0; i < n; ++i) CHECK_EQ(out[i].status, PD3_OK);
    completed += n;
    if (n == 0) {
      REQUIRE(Clock::now() < deadline);
      std::this_thread::yield();
    }
  }
  CHECK_EQ(rig.c()->host_ring_full, 2u + uint64_t(again));  // every refusal was counted
  // Nothing was lost or overwritten: the region equals the model (the refused writes never landed).
  std::vector<uint8_t> back(1 << 16);
  for (uint32_t off = 0; off < back.size(); off += 1024) {
    int id;
    while ((id = pd3_host_read(rig.h, r, off, 1024, back.data() + off, off)) == PD3_E_AGAIN) {
      pd3_host_poll(rig.h, out, 64);
      std::this_thread::yield();
    }
    REQUIRE(id >= 0);
  }
  REQUIRE(poll_until(rig.h, [&](const pd3_completion& c) { CHECK_EQ(c.status, PD3_OK); },
                     [&] { return pd3_host_inflight(rig.h) == 0; }));
  CHECK(back == model);
}

TEST(host_close_with_requests_in_flight_discards_them) {
  Rig rig;
  REQUIRE(rig.ok());
  rig.agent->start();
  const uint32_t r = allocate(rig.h, 1 << 16);
  REQUIRE(r != 0);
  std::vector<uint8_t> pattern(1 << 16);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = uint8_t(i ^ (i >> 8) ^ 0x3C);
  REQUIRE(pd3_host_write(rig.h, r, 0, pattern.data(), 1 << 16, 0) >= 0);
  bool wrote = false;
  REQUIRE(poll_until(rig.h, [&](const pd3_completion&) { wrote = true; }, [&] { return wrote; }));

  rig.agent->paused.store(true);
  const uint64_t answered_before = rig.agent->answered.load();
  pd3_host* h2 = nullptr;
  REQUIRE(pd3_host_attach(rig.name.c_str(), &h2) == PD3_OK);
  std::vector<uint8_t> closed_dest(50 * 64, 0xAB);
  for (int i = 0; i < 50; ++i) REQUIRE(pd3_host_read(h2, r, uint32_t(i * 64), 64, &closed_dest[i * 64], i) >= 0);
  REQUIRE(pd3_host_flush(h2) == PD3_OK);  // in the ring before h2 closes
  std::vector<uint8_t> own_dest(5 * 64, 0);
  for (int i = 0; i < 5; ++i) REQUIRE(pd3_host_read(rig.h, r, uint32_t(i * 64), 64, &own_dest[i * 64], 1000 + i) >= 0);

  // A poller on the other handle runs while h2 closes and while the agent answers everything.
  std::atomic<bool> stop_polling{false};
  std::atomic<int> own_done{0};
  std::atomic<int> foreign{0};
  std::thread poller([&] {
    pd3_completion out[16];
    while (!stop_polling.load(std::memory_order_acquire)) {
      const int n = pd3_host_poll(rig.h, out, 16);
      for (int i = 0; i < n; ++i) {
        if (out[i].user_data >= 1000 && out[i].user_data < 1005 && out[i].status == PD3_OK)
          own_done.fetch_add(1);
        else
          foreign.fetch_add(1);
      }
      if (n <= 0) std::this_thread::yield();
    }
  });
  pd3_host_close(h2);
  rig.agent->paused.store(false);
  // Wait (bounded) until the agent has answered all 55 and the poller has drained the ring.
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (!(own_done.load() == 5 && rig.agent->answered.load() >= answered_before + 55 &&
           pd3::load_relaxed(rig.c()->resp_head) == pd3::load_relaxed(rig.c()->resp_tail))) {
    REQUIRE(Clock::now() < deadline);
    std::this_thread::yield();
  }
  stop_polling.store(true, std::memory_order_release);
  poller.join();
  CHECK_EQ(foreign.load(), 0);  // the closed handle's completions were discarded
  CHECK_EQ(own_done.load(), 5);
  CHECK(std::memcmp(own_dest.data(), pattern.data(), own_dest.size()) == 0);
  for (uint8_t b : closed_dest) CHECK_EQ(b, 0xAB);  // destinations of the closed handle untouched
  CHECK_EQ(pd3_host_inflight(rig.h), 0u);

  // The discarded requests' ids were released: all 16384 can be issued again.
  rig.agent->paused.store(true);
  std::vector<uint8_t> sink(PD3_MAX_INFLIGHT * 8);
  uint32_t issued = 0;
  for (; issued < PD3_MAX_INFLIGHT; ++issued)
    if (pd3_host_read(rig.h, r, 0, 8, &sink[issued * 8], issued) < 0) break;
  CHECK_EQ(issued, PD3_MAX_INFLIGHT);
  rig.agent->paused.store(false);
  uint32_t back = 0;
  CHECK(poll_until(rig.h, [&](const pd3_completion&) { ++back; }, [&] { return back == issued; }));
}

TEST(host_close_creator_with_requests_in_flight) {
  // The creating handle goes away while the agent still owes responses: no crash, the name is gone,
  // and a second handle keeps working.
  Rig rig;
  REQUIRE(rig.ok());
  rig.agent->start();
  const uint32_t r = allocate(rig.h, 4096);
  REQUIRE(r != 0);
  pd3_host* h2 = nullptr;
  REQUIRE(pd3_host_attach(rig.name.c_str(), &h2) == PD3_OK);
  rig.agent->paused.store(true);
  std::vector<uint8_t> dest(100 * 8, 0x11);
  for (int i = 0; i < 100; ++i) REQUIRE(pd3_host_read(rig.h, r, 0, 8, &dest[i * 8], i) >= 0);
  pd3_host_close(rig.h);
  rig.h = nullptr;
  CHECK(::access(("/dev/shm/" + rig.name).c_str(), F_OK) != 0);
  rig.agent->paused.store(false);
  uint64_t v = 0;
  int id;
  while ((id = pd3_host_read(h2, r, 0, 8, &v, 5555)) == PD3_E_AGAIN) std::this_thread::yield();
  REQUIRE(id >= 0);
  std::vector<pd3_completion> got;
  REQUIRE(poll_until(h2, [&](const pd3_completion& c) { got.push_back(c); }, [&] { return !got.empty(); }));
  CHECK_EQ(got.size(), 1u);
  CHECK_EQ(got[0].user_data, 5555u);
  CHECK_EQ(got[0].status, PD3_OK);
  for (uint8_t b : dest) CHECK_EQ(b, 0x11);
  pd3_host_close(h2);
}

TEST(host_agent_alive_follows_the_heartbeat) {
  const std::string name = pd3test::unique_name("alive");
  const pd3_host_config cfg = config_for(name, {}, 50);
  pd3_host* h = nullptr;
  REQUIRE(pd3_host_create(&cfg, &h) == PD3_OK);
  CHECK_EQ(pd3_host_agent_alive(h), 0);  // never attached
  std::unique_ptr<pd3::AgentSession> agent;
  REQUIRE(pd3::AgentSession::attach(name.c_str(), &agent) == PD3_OK);
  for (int round = 0; round < 3; ++round) {
    const auto t0 = Clock::now();
    agent->beat();
    const int alive = pd3_host_agent_alive(h);
    if (Clock::now() - t0 < std::chrono::milliseconds(40)) CHECK_EQ(alive, 1);
    // Without beats it is declared down after the timeout, not before.
    const auto deadline = t0 + std::chrono::seconds(5);
    while (pd3_host_agent_alive(h) && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    CHECK_EQ(pd3_host_agent_alive(h), 0);
    CHECK(Clock::now() - t0 >= std::chrono::milliseconds(50));
  }
  // Another handle in the same process shares the configured timeout.
  pd3_host* h2 = nullptr;
  REQUIRE(pd3_host_attach(name.c_str(), &h2) == PD3_OK);
  agent->beat();
  CHECK_EQ(pd3_host_agent_alive(h2), 1);
  pd3_host_close(h2);
  pd3_host_close(h);
}

TEST(host_second_process_may_only_check_and_return) {
  // No threads run while forking: the child only calls the ABI and reports through its exit code.
  const std::string name = pd3test::unique_name("fork");
  const pd3_host_config cfg = config_for(name, pd3_segment_sizes{0, 0, 1 << 16, 64, 0});
  pd3_host* h = nullptr;
  REQUIRE(pd3_host_create(&cfg, &h) == PD3_OK);
  TestAgent agent(name);
  REQUIRE(agent.ok());
  // A parent request with its response already waiting in the ring.
  REQUIRE(pd3_host_allocate(h, 4096, 31) >= 0);
  for (int i = 0; i < 10 && agent.answered.load() == 0; ++i) agent.pass();
  REQUIRE(agent.answered.load() == 1);
  // An item for the child to take.
  const char value[] = "produced by the agent";
  REQUIRE(agent.session().zone().produce(pd3_op_id(PD3_OP_PREFETCH, 0), "forked", 6, value, sizeof value) > 0);

  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int bad = 0;
    pd3_host* ch = nullptr;
    if (pd3_host_attach(name.c_str(), &ch) != PD3_OK) _exit(100);
    uint8_t buf[64];
    if (pd3_host_read(ch, 1, 0, 8, buf, 0) != PD3_E_NOT_OWNER) bad |= 1;
    if (pd3_host_write(ch, 1, 0, buf, 8, 0) != PD3_E_NOT_OWNER) bad |= 2;
    if (pd3_host_allocate(ch, 8, 0) != PD3_E_NOT_OWNER) bad |= 4;
    if (pd3_host_deallocate(ch, 1, 0) != PD3_E_NOT_OWNER) bad |= 8;
    pd3_completion out[4];
    if (pd3_host_poll(ch, out, 4) != 0) bad |= 16;  // and it must not steal the parent's response
    const int64_t n = pd3_host_check_and_return(ch, "forked", 6, buf, sizeof buf);
    if (n != int64_t(sizeof value) || std::memcmp(buf, value, sizeof value) != 0) bad |= 32;
    if (pd3_host_check_and_return(ch, "forked", 6, buf, sizeof buf) != 0) bad |= 64;
    pd3_host_close(ch);
    _exit(bad);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  if (WEXITSTATUS(status) != 0) std::fprintf(stderr, "  child reported failures 0x%x\n", WEXITSTATUS(status));
  CHECK_EQ(WEXITSTATUS(status), 0);
  // The child took the item (once, for everyone) and left the parent's completion alone.
  uint8_t buf[64];
  CHECK_EQ(pd3_host_check_and_return(h, "forked", 6, buf, sizeof buf), 0);
  CHECK_EQ(agent.session().zone().clean(), 1u);
  CHECK_EQ(pd3_host_control(h)->lz_consumed, 1u);
  pd3_completion out[4];
  const int n = pd3_host_poll(h, out, 4);
  CHECK_EQ(n, 1);
  if (n == 1) {
    CHECK_EQ(out[0].user_data, 31u);
    CHECK_EQ(out[0].status, PD3_OK);
  }
  pd3_host_close(h);
}

// ---- staging: requests through the agent are published in batches -------------------------------

TEST(host_requests_are_staged_until_poll_flush_or_a_full_batch) {
  Rig rig({}, 0, 4);  // publish_batch 4
  REQUIRE(rig.ok());
  rig.agent->start();
  const uint32_t r = allocate(rig.h, 1 << 16);
  REQUIRE(r != 0);
  rig.agent->paused.store(true);
  const uint64_t before = rig.c()->host_requests;
  const uint64_t tail_before = rig.c()->req_tail;
  uint8_t dest[6][8];
  for (int i = 0; i < 3; ++i) REQUIRE(pd3_host_read(rig.h, r, uint32_t(i * 8), 8, dest[i], uint64_t(i)) >= 0);
  CHECK_EQ(rig.c()->host_requests, before);  // staged: nothing in the ring yet
  CHECK_EQ(rig.c()->req_tail, tail_before);
  CHECK_EQ(pd3_host_inflight(rig.h), 3u);
  REQUIRE(pd3_host_read(rig.h, r, 24, 8, dest[3], 3) >= 0);  // the fourth fills the batch
  CHECK_EQ(rig.c()->host_requests, before + 4);
  for (int i = 4; i < 6; ++i) REQUIRE(pd3_host_read(rig.h, r, uint32_t(i * 8), 8, dest[i], uint64_t(i)) >= 0);
  CHECK_EQ(rig.c()->host_requests, before + 4);
  CHECK_EQ(pd3_host_flush(rig.h), PD3_OK);
  CHECK_EQ(rig.c()->host_requests, before + 6);
  CHECK_EQ(pd3_host_flush(rig.h), PD3_OK);  // nothing staged: a no-op
  CHECK_EQ(rig.c()->host_requests, before + 6);
  rig.agent->paused.store(false);
  std::vector<uint64_t> done;
  REQUIRE(poll_until(rig.h, [&](const pd3_completion& c) {
    CHECK_EQ(c.status, PD3_OK);
    done.push_back(c.user_data);
  }, [&] { return done.size() == 6; }));
  for (uint64_t i = 0; i < 6; ++i) CHECK_EQ(done[i], i);  // published, and answered, in issue order
}

TEST(host_publish_batch_is_checked) {
  const std::string name = pd3test::unique_name("batch-cfg");
  pd3_host_config cfg = config_for(name, {}, 0, PD3_MAX_PUBLISH_BATCH + 1);
  pd3_host* h = nullptr;
  CHECK_EQ(pd3_host_create(&cfg, &h), PD3_E_INVAL);
  CHECK(h == nullptr);
  CHECK(std::string(pd3_last_error()).find("publish_batch") != std::string::npos);
  cfg.publish_batch = PD3_MAX_PUBLISH_BATCH;
  REQUIRE(pd3_host_create(&cfg, &h) == PD3_OK);
  pd3_host_close(h);
  CHECK_EQ(pd3_host_flush(nullptr), PD3_E_INVAL);
}

TEST(host_staged_requests_fail_when_the_agent_dies_before_they_are_published) {
  Rig rig({}, 50, 32);  // heartbeat timeout 50 ms
  REQUIRE(rig.ok());
  rig.agent->start();
  const uint32_t r = allocate(rig.h, 1 << 16);
  REQUIRE(r != 0);
  rig.agent->stop();  // no more beats; the last one is fresh for 50 ms
  const uint64_t before = rig.c()->host_requests;
  uint8_t dest[5][8];
  for (int i = 0; i < 5; ++i) REQUIRE(pd3_host_read(rig.h, r, 0, 8, dest[i], uint64_t(10 + i)) >= 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  std::vector<pd3_completion> got;
  REQUIRE(poll_until(rig.h, [&](const pd3_completion& c) { got.push_back(c); }, [&] { return got.size() == 5; }));
  for (int i = 0; i < 5; ++i) {
    CHECK_EQ(got[i].user_data, uint64_t(10 + i));
    CHECK_EQ(got[i].status, PD3_E_AGENT_DOWN);
  }
  CHECK_EQ(rig.c()->host_requests, before);  // never reached the ring
  CHECK_EQ(pd3_host_inflight(rig.h), 0u);
  CHECK_EQ(pd3_host_read(rig.h, r, 0, 8, dest[0], 99), PD3_E_AGENT_DOWN);
}

TEST(host_close_publishes_staged_requests_and_hands_every_id_back) {
  Rig rig({}, 0, 32);
  REQUIRE(rig.ok());
  rig.agent->start();
  const uint32_t r = allocate(rig.h, 1 << 16);
  REQUIRE(r != 0);
  rig.agent->paused.store(true);
  pd3_host* h2 = nullptr;
  REQUIRE(pd3_host_attach(rig.name.c_str(), &h2) == PD3_OK);
  const uint8_t src[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  for (int i = 0; i < 20; ++i) REQUIRE(pd3_host_write(h2, r, uint32_t(i * 8), src, 8, uint64_t(i)) >= 0);
  const uint64_t before = rig.c()->host_requests;
  const uint64_t answered = rig.agent->answered.load();
  pd3_host_close(h2);
  CHECK_EQ(rig.c()->host_requests, before + 20);  // nothing issued is lost at close
  rig.agent->paused.store(false);
  REQUIRE(poll_until(rig.h, [&](const pd3_completion&) { CHECK(false); },  // h2's answers are discarded
                     [&] { return rig.agent->answered.load() >= answered + 20 &&
                                  pd3::load_relaxed(rig.c()->resp_head) == pd3::load_relaxed(rig.c()->resp_tail); }));
  uint8_t dest[8];
  REQUIRE(pd3_host_read(rig.h, r, 19 * 8, 8, dest, 7) >= 0);
  bool read = false;
  REQUIRE(poll_until(rig.h, [&](const pd3_completion& c) { read = c.user_data == 7 && c.status == PD3_OK; },
                     [&] { return read; }));
  CHECK(std::memcmp(dest, src, 8) == 0);
  // Every id is free again (h2's staged, cached and answered ones): the whole limit is available.
  rig.agent->paused.store(true);
  int issued = 0, rc = 0;
  while ((rc = pd3_host_read(rig.h, r, 0, 8, dest, 1000)) >= 0) ++issued;
  CHECK_EQ(rc, PD3_E_INFLIGHT);
  CHECK_EQ(issued, int(PD3_MAX_INFLIGHT));
}

TEST(host_threads_sharing_handles_lose_nothing) {
  // Four threads on two handles (two threads each) issue 64-byte writes to their own stripes of
  // one region, then read every stripe back, each polling its handle: staging, id caches and
  // completion routing under concurrency. Every request completes exactly once, and the region
  // holds what was written.
  Rig rig({}, 0, 32);
  REQUIRE(rig.ok());
  rig.agent->start();
  const uint32_t kThreads = 4, kPerThread = 3000, kSize = 64;
  const uint32_t r = allocate(rig.h, kThreads * kPerThread * kSize);
  REQUIRE(r != 0);
  pd3_host* h2 = nullptr;
  REQUIRE(pd3_host_attach(rig.name.c_str(), &h2) == PD3_OK);
  pd3_host* handles[2] = {rig.h, h2};
  const auto value = [](uint32_t t, uint32_t i, uint32_t b) { return uint8_t((t * 131 + i * 7 + b) ^ (i >> 8)); };
  std::vector<std::atomic<uint8_t>> seen(2 * kThreads * kPerThread);
  std::vector<uint8_t> back(size_t(kThreads) * kPerThread * kSize, 0);
  std::atomic<uint32_t> errors{0}, duplicates{0};
  std::atomic<uint32_t> completed[2] = {0, 0};
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      pd3_host* h = handles[t % 2];
      std::atomic<uint32_t>& mine = completed[t % 2];
      const auto drain = [&] {
        pd3_completion out[32];
        const int n = pd3_host_poll(h, out, 32);
        for (int k = 0; k < std::max(n, 0); ++k) {
          if (out[k].status != PD3_OK) errors.fetch_add(1);
          if (seen[out[k].user_data].exchange(1) != 0) duplicates.fetch_add(1);
          mine.fetch_add(1);
        }
        return n;
      };
      std::vector<uint8_t> data(kSize);
      for (uint32_t phase = 0; phase < 2; ++phase) {
        for (uint32_t i = 0; i < kPerThread; ++i) {
          const uint32_t slot = t * kPerThread + i;
          const uint64_t tag = uint64_t(phase) * kThreads * kPerThread + slot;
          for (uint32_t b = 0; b < kSize; ++b) data[b] = value(t, i, b);
          for (;;) {
            const int rc = phase == 0 ? pd3_host_write(h, r, slot * kSize, data.data(), kSize, tag)
                                      : pd3_host_read(h, r, slot * kSize, kSize, &back[size_t(slot) * kSize], tag);
            if (rc >= 0) break;
            if (rc != PD3_E_AGAIN && rc != PD3_E_INFLIGHT) {
              errors.fetch_add(1);
              return;
            }
            drain();
          }
          if (i % 16 == 0) drain();
        }
        // Both threads of a handle count its completions: wait for the pair's whole phase.
        const uint32_t target = (phase + 1) * 2 * kPerThread;
        const auto deadline = Clock::now() + std::chrono::seconds(30);
        while (mine.load() < target && Clock::now() < deadline)
          if (drain() == 0) std::this_thread::yield();
        if (mine.load() < target) errors.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK_EQ(errors.load(), 0u);
  CHECK_EQ(duplicates.load(), 0u);
  CHECK_EQ(completed[0].load() + completed[1].load(), 2 * kThreads * kPerThread);
  uint32_t wrong = 0;
  for (uint32_t t = 0; t < kThreads; ++t)
    for (uint32_t i = 0; i < kPerThread; ++i)
      for (uint32_t b = 0; b < kSize; ++b) wrong += back[(size_t(t) * kPerThread + i) * kSize + b] != value(t, i, b);
  CHECK_EQ(wrong, 0u);
  CHECK_EQ(pd3_host_inflight(rig.h) + pd3_host_inflight(h2), 0u);
  pd3_host_close(h2);
}
