// direct_registration_test.cpp — direct mode registers the caller's buffers through the handle's
// MRRC (native/host/direct_registration.hpp): a repeated read destination is a hit, the segment's
// host_mr_* counters say so (hits reach them in batches, exactly once nothing is held), the pages
// are really locked (VmLck) until the handle closes, and a buffer the cache refuses still gets its
// data (counted as a failure); with PD3_HOST_DIRECT_UNREGISTERED nothing is registered or counted.
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/atomics.hpp"
#include "fake_memserver.hpp"
#include "host/direct_registration.hpp"
#include "harness.hpp"
#include "util.hpp"

namespace {

using pd3test::vm_locked_kib;

pd3_host* direct_host(uint16_t port, uint32_t mr_cache_bytes, uint32_t extra_flags = 0, uint32_t publish_batch = 0) {
  const std::string name = pd3test::unique_name("mrdirect");
  const std::string servers = "127.0.0.1:" + std::to_string(port);
  pd3_host_config cfg{};
  cfg.name = name.c_str();
  cfg.flags = PD3_HOST_DIRECT_ONLY | extra_flags;
  cfg.direct_servers = servers.c_str();
  cfg.direct_token = "t";
  cfg.direct_timeout_ms = 500;
  cfg.direct_mr_cache_bytes = mr_cache_bytes;
  cfg.publish_batch = publish_batch;
  pd3_host* h = nullptr;
  return pd3_host_create(&cfg, &h) == PD3_OK ? h : nullptr;
}

int await(pd3_host* h, pd3_completion* c) {
  for (int i = 0; i < 10000; ++i) {
    if (pd3_host_poll(h, c, 1) == 1) return c->status;
    pd3_host_wait(h, 1000);
  }
  return 1;
}

uint64_t counter(pd3_host* h, const uint64_t pd3_control::*field) {
  return pd3::load_relaxed(pd3_host_control(h)->*field);
}

// Allocates a 64 KiB region on `h` and writes `src` at its start; returns the region (0 on failure).
uint32_t region_holding(pd3_host* h, const std::string& src) {
  pd3_completion c{};
  if (pd3_host_allocate(h, 1 << 16, 1) < 0 || await(h, &c) != PD3_OK) return 0;
  const uint32_t region = c.region;
  if (pd3_host_write(h, region, 0, src.data(), uint32_t(src.size()), 2) < 0 || await(h, &c) != PD3_OK) return 0;
  return region;
}

// Reads the first dest->size() bytes of `region` into *dest; returns the completion's status.
int read_into(pd3_host* h, uint32_t region, std::string* dest) {
  pd3_completion c{};
  if (pd3_host_read(h, region, 0, uint32_t(dest->size()), dest->data(), 3) < 0) return 1;
  return await(h, &c);
}

}  // namespace

TEST(direct_reads_register_their_destination_once) {
  pd3test::FakeMemServer server({.server_id = 1, .token = "t", .capacity = 1 << 20});
  REQUIRE(server.start());
  const long locked_before = vm_locked_kib();
  pd3_host* h = direct_host(server.port(), 0);
  REQUIRE(h != nullptr);
  pd3_completion c{};
  REQUIRE(pd3_host_allocate(h, 1 << 16, 1) >= 0);
  REQUIRE(await(h, &c) == PD3_OK);
  const uint32_t region = c.region;
  auto* src = static_cast<char*>(mmap(nullptr, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  auto* dest = static_cast<char*>(mmap(nullptr, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  REQUIRE(src != MAP_FAILED && dest != MAP_FAILED);
  std::memset(src, 'x', 3 * 4096);
  REQUIRE(pd3_host_write(h, region, 0, src, 3 * 4096, 2) >= 0);  // the source: one registration
  REQUIRE(await(h, &c) == PD3_OK);
  for (int i = 0; i < 3; ++i) {
    std::memset(dest, 0, 3 * 4096);
    REQUIRE(pd3_host_read(h, region, 0, 3 * 4096, dest, 3) >= 0);
    CHECK_EQ(await(h, &c), PD3_OK);
    CHECK(std::memcmp(dest, src, 3 * 4096) == 0);
  }
  // A read inside the same pages: a hit.
  REQUIRE(pd3_host_read(h, region, 0, 100, dest + 4096, 4) >= 0);
  CHECK_EQ(await(h, &c), PD3_OK);
  CHECK_EQ(counter(h, &pd3_control::host_mr_misses), 2u);  // the write's source, the first read
  CHECK_EQ(counter(h, &pd3_control::host_mr_hits), 3u);
  CHECK_EQ(counter(h, &pd3_control::host_mr_registrations), 2u);
  CHECK_EQ(counter(h, &pd3_control::host_mr_pinned_bytes), 6u * 4096);
  CHECK_EQ(counter(h, &pd3_control::host_mr_failures), 0u);
  if (pd3test::kMlockPins) CHECK_EQ(vm_locked_kib() - locked_before, 24);  // cached after completion: still pinned
  pd3_host_close(h);
  CHECK_EQ(vm_locked_kib(), locked_before);  // the handle's cache went with it
  munmap(src, 1 << 16);
  munmap(dest, 1 << 16);
}

TEST(direct_unregistered_reads_and_writes_register_nothing) {
  pd3test::FakeMemServer server({.server_id = 1, .token = "t", .capacity = 1 << 20});
  REQUIRE(server.start());
  const long locked_before = vm_locked_kib();
  pd3_host* h = direct_host(server.port(), 0, PD3_HOST_DIRECT_UNREGISTERED);
  REQUIRE(h != nullptr);
  const std::string src(3 * 4096, 'u');
  const uint32_t region = region_holding(h, src);
  REQUIRE(region != 0);
  for (int i = 0; i < 3; ++i) {
    std::string dest(src.size(), '\0');
    CHECK_EQ(read_into(h, region, &dest), PD3_OK);
    CHECK(dest == src);
  }
  // No cache, so nothing counted anywhere (not even as failures) and no page locked.
  for (auto field : {&pd3_control::host_mr_hits, &pd3_control::host_mr_misses, &pd3_control::host_mr_registrations,
                     &pd3_control::host_mr_failures, &pd3_control::host_mr_pinned_bytes})
    CHECK_EQ(counter(h, field), 0u);
  CHECK_EQ(vm_locked_kib(), locked_before);
  pd3_host_close(h);
}

TEST(host_create_refuses_unknown_flags) {
  pd3_host_config cfg{};
  const std::string name = pd3test::unique_name("badflags");
  cfg.name = name.c_str();
  cfg.flags = 0x80u;
  pd3_host* h = nullptr;
  CHECK_EQ(pd3_host_create(&cfg, &h), PD3_E_INVAL);
  CHECK(h == nullptr);
  CHECK(std::string(pd3_last_error()).find("flags") != std::string::npos);
}

TEST(direct_read_larger_than_the_cache_still_completes) {
  pd3test::FakeMemServer server({.server_id = 1, .token = "t", .capacity = 1 << 20});
  REQUIRE(server.start());
  pd3_host* h = direct_host(server.port(), 4096);  // one page
  REQUIRE(h != nullptr);
  const std::string src(3 * 4096, 'y');
  const uint32_t region = region_holding(h, src);
  REQUIRE(region != 0);
  std::string dest(src.size(), '\0');
  CHECK_EQ(read_into(h, region, &dest), PD3_OK);
  CHECK(dest == src);
  CHECK_EQ(counter(h, &pd3_control::host_mr_failures), 2u);  // too large for a one-page cache
  CHECK_EQ(counter(h, &pd3_control::host_mr_pinned_bytes), 0u);
  pd3_host_close(h);
}

TEST(direct_registration_stress_threads_share_one_handle) {
  // Four threads issue reads on one handle into buffers that overlap (some pages shared, some
  // not) while one polls: registrations are taken at issue and given back at completion under
  // the handle's id lock, whatever the interleaving; at the end nothing is held or pinned.
  pd3test::FakeMemServer server({.server_id = 1, .token = "t", .capacity = 1 << 20});
  REQUIRE(server.start());
  const long locked_before = vm_locked_kib();
  pd3_host* h = direct_host(server.port(), 64 * 4096);
  REQUIRE(h != nullptr);
  pd3_completion c{};
  REQUIRE(pd3_host_allocate(h, 1 << 16, 1) >= 0);
  REQUIRE(await(h, &c) == PD3_OK);
  const uint32_t region = c.region;
  constexpr size_t kBuf = 96 * 4096;
  auto* buf = static_cast<char*>(mmap(nullptr, kBuf, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  REQUIRE(buf != MAP_FAILED);
  constexpr int kThreads = 4, kReads = 300;
  std::atomic<int> issued{0}, refused{0};
  std::atomic<bool> done{false};
  std::thread poller([&] {
    pd3_completion out[64];
    while (!done.load()) {
      pd3_host_poll(h, out, 64);
      pd3_host_wait(h, 1000);
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kReads; ++i) {
        const size_t off = size_t((t * 7 + i * 13) % 88) * 4096 + size_t(i % 100);
        const int rc = pd3_host_read(h, region, 0, 4096 + uint32_t(i % 3) * 4096, buf + off, uint64_t(i));
        if (rc >= 0) issued++;
        else refused++;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int i = 0; i < 10000 && pd3_host_inflight(h) > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  done = true;
  poller.join();
  CHECK_EQ(refused.load(), 0);
  CHECK_EQ(pd3_host_inflight(h), 0u);
  const uint64_t hits = counter(h, &pd3_control::host_mr_hits), misses = counter(h, &pd3_control::host_mr_misses);
  // Every read's destination went through the cache once (the allocate has no buffer).
  CHECK_EQ(hits + misses + counter(h, &pd3_control::host_mr_failures), uint64_t(issued.load()));
  CHECK(hits > 0);
  CHECK(counter(h, &pd3_control::host_mr_pinned_bytes) <= 64u * 4096);
  pd3_host_close(h);
  CHECK_EQ(vm_locked_kib(), locked_before);
  munmap(buf, kBuf);
}

TEST(direct_registration_hits_reach_the_segment_in_batches_and_exactly_when_idle) {
  // A hit is counted in the handle; host_mr_hits moves every kPublishEvery hits while a
  // registration is held, and catches up fully once none is (and at close).
  pd3_control control{};
  auto regs = pd3::DirectRegistrations::make(16 * 4096, &control);
  REQUIRE(regs != nullptr);
  auto* buf = static_cast<char*>(mmap(nullptr, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  REQUIRE(buf != MAP_FAILED);
  const uint64_t held = regs->acquire(buf, 4096);  // a miss, published at once; stays held
  REQUIRE(held != 0);
  CHECK_EQ(pd3::load_relaxed(control.host_mr_misses), 1u);
  CHECK_EQ(pd3::load_relaxed(control.host_mr_pinned_bytes), 4096u);
  constexpr uint64_t kEvery = pd3::DirectRegistrations::kPublishEvery;
  const uint64_t hits = 2 * kEvery + 5;
  for (uint64_t i = 0; i < hits; ++i) {
    const uint64_t h = regs->acquire(buf + i % 4096, 1);
    REQUIRE(h != 0);
    regs->release(h);
  }
  CHECK_EQ(pd3::load_relaxed(control.host_mr_hits), 2 * kEvery);  // the last 5 wait: `held` is out
  regs->release(held);
  CHECK_EQ(pd3::load_relaxed(control.host_mr_hits), hits);  // idle: exact
  const uint64_t last = regs->acquire(buf + 10, 10);
  REQUIRE(last != 0);
  CHECK_EQ(pd3::load_relaxed(control.host_mr_hits), hits);
  regs.reset();  // close with one still held: its hit is published, the gauge drops to 0
  CHECK_EQ(pd3::load_relaxed(control.host_mr_hits), hits + 1);
  CHECK_EQ(pd3::load_relaxed(control.host_mr_pinned_bytes), 0u);
  CHECK_EQ(pd3::load_relaxed(control.host_mr_misses), 1u);
  CHECK_EQ(pd3::load_relaxed(control.host_mr_failures), 0u);
  munmap(buf, 2 * 4096);
}

TEST(direct_staged_reads_refused_later_give_their_registration_back) {
  // With batches of 2, every other read to a region no server has is refused when its batch is
  // queued, after its destination was registered. Those registrations must end with the refusal:
  // held, ten of them would fill ten of the cache's sixteen pages, and sixteen reads into fresh
  // pages in flight together after them could not all be registered.
  pd3test::FakeMemServer server({.server_id = 1, .token = "t", .capacity = 1 << 20});
  REQUIRE(server.start());
  pd3_host* h = direct_host(server.port(), 16 * 4096, 0, 2);
  REQUIRE(h != nullptr);
  const uint32_t region = region_holding(h, std::string(4096, 'x'));
  REQUIRE(region != 0);
  constexpr size_t kPages = 40;
  auto* buf = static_cast<char*>(mmap(nullptr, kPages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  REQUIRE(buf != MAP_FAILED);
  const uint32_t nowhere = pd3_region_id(5, 1);
  int refused_at_issue = 0, refused_later = 0;
  for (int i = 0; i < 20; ++i) {
    const int rc = pd3_host_read(h, nowhere, 0, 4096, buf + size_t(i) * 4096, uint64_t(i));
    if (rc == PD3_E_BAD_REGION) ++refused_at_issue;
  }
  pd3_completion c{};
  for (int i = 0; i < 100 && refused_later < 20 - refused_at_issue; ++i) {
    if (pd3_host_poll(h, &c, 1) == 1) refused_later += c.status == PD3_E_BAD_REGION;
    else pd3_host_wait(h, 1000);
  }
  CHECK_EQ(refused_at_issue, 10);
  CHECK_EQ(refused_later, 10);
  const uint64_t failures_before = counter(h, &pd3_control::host_mr_failures);
  for (size_t page = 20; page < 36; ++page)  // all sixteen in flight together
    REQUIRE(pd3_host_read(h, region, 0, 4096, buf + page * 4096, page) >= 0);
  for (int i = 0; i < 16; ++i) CHECK_EQ(await(h, &c), PD3_OK);
  CHECK_EQ(counter(h, &pd3_control::host_mr_failures), failures_before);
  CHECK_EQ(pd3_host_inflight(h), 0u);
  pd3_host_close(h);
  munmap(buf, kPages * 4096);
}
