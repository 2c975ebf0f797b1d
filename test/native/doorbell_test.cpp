// doorbell_test.cpp — the engine's doorbell: a ring reaches the engine only when it announced a
// sleep, through the eventfd while it polls its sockets and through the futex while it sleeps; the
// arm / check / ring handshake never loses a hand-off (stress with a real sleeping thread); and a
// host in another process wakes a sleeping agent through the shared segment.
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "common/doorbell.hpp"
#include "dpu/agent_doorbell.hpp"
#include "dpu/shm_dma.hpp"
#include "common/atomics.hpp"
#include "harness.hpp"
#include "util.hpp"

namespace {

bool readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

const timespec kLong{30, 0};  // a wait that ends by a ring, never by this

}  // namespace

TEST(doorbell_rings_only_an_announced_sleep) {
  auto c = std::make_unique<pd3_control>();
  pd3::ShmDma dma(reinterpret_cast<uint8_t*>(c.get()), sizeof(pd3_control));
  pd3::AgentDoorbell d;
  REQUIRE(d.open(&dma) == PD3_OK);
  d.ring();  // awake: nothing
  CHECK(!readable(d.fd(), 0));
  CHECK_EQ(c->agent_doorbell, 0u);
  d.arm(PD3_AGENT_POLLING);
  d.ring();  // polling sockets: the eventfd
  CHECK(readable(d.fd(), 0));
  CHECK_EQ(c->agent_doorbell, 0u);
  d.disarm(true);
  CHECK(!readable(d.fd(), 0));
  const uint32_t armed = d.arm(PD3_AGENT_SLEEPING);
  pd3::ring_agent(c.get());  // sleeping: the futex word, from "another process"
  CHECK_EQ(c->agent_doorbell, armed + 1);
  CHECK(d.sleep(armed, &kLong));  // the count moved: returns at once, as rung
  d.disarm(false);
  pd3::ring_agent(c.get());  // awake again: nothing
  CHECK_EQ(c->agent_doorbell, armed + 1);
  const timespec short_wait{0, 1000000};
  CHECK(!d.sleep(d.arm(PD3_AGENT_SLEEPING), &short_wait));  // nobody rings: a timeout
  d.disarm(false);
}

TEST(doorbell_stress_no_lost_handoff) {
  // A producer publishes numbered work items and rings; the consumer checks for work after arming
  // and otherwise sleeps — alternately on the futex and on the eventfd — with a long timeout. A lost
  // hand-off shows up as a timeout with work pending.
  auto c = std::make_unique<pd3_control>();
  pd3::ShmDma dma(reinterpret_cast<uint8_t*>(c.get()), sizeof(pd3_control));
  pd3::AgentDoorbell d;
  REQUIRE(d.open(&dma) == PD3_OK);
  const uint64_t items = 20000 * pd3test::stress_scale();
  std::atomic<uint64_t> published{0};
  uint64_t taken = 0, sleeps = 0, lost = 0;
  std::thread consumer([&] {
    while (taken < items) {
      // acquire: pairs with the producer's release; items below are "done".
      if (published.load(std::memory_order_acquire) > taken) {
        ++taken;
        continue;
      }
      const bool futex = sleeps % 2 == 0;
      const uint32_t armed = d.arm(futex ? PD3_AGENT_SLEEPING : PD3_AGENT_POLLING);
      if (published.load(std::memory_order_acquire) > taken) {  // acquire: as above
        d.disarm(false);
        continue;
      }
      ++sleeps;
      const bool rung = futex ? d.sleep(armed, &kLong) : readable(d.fd(), 30000);
      if (!rung && published.load(std::memory_order_acquire) > taken) ++lost;  // acquire: as above
      d.disarm(!futex && rung);
    }
  });
  for (uint64_t i = 0; i < items; ++i) {
    published.store(i + 1, std::memory_order_release);  // release: the consumer's acquire sees it
    if (i % 2 == 0) {
      d.ring();
    } else {
      pd3::ring_agent(c.get());  // a host thread's ring: only heard by a futex sleep
      d.ring();
    }
    if (i % 64 == 0) std::this_thread::yield();
  }
  consumer.join();
  CHECK_EQ(taken, items);
  CHECK_EQ(lost, 0u);
  std::printf("    %llu items, %llu sleeps\n", (unsigned long long)items, (unsigned long long)sleeps);
}

TEST(doorbell_host_process_wakes_a_sleeping_agent) {
  // The control block of a real segment is shared with a forked "host" that rings once it sees the
  // agent asleep; the agent's futex sleep returns rung (not timed out).
  pd3test::ScopedHost host("doorbell");
  REQUIRE(host.rc == PD3_OK);
  pd3_control* c = host.control();
  pd3::ShmDma dma(reinterpret_cast<uint8_t*>(c), sizeof(pd3_control));
  pd3::AgentDoorbell d;
  REQUIRE(d.open(&dma) == PD3_OK);
  const uint32_t armed = d.arm(PD3_AGENT_SLEEPING);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // acquire: the parent's store of agent_sleeping happened before the fork anyway.
    while (pd3::aref(c->agent_sleeping).load(std::memory_order_acquire) != PD3_AGENT_SLEEPING) usleep(100);
    usleep(20000);  // let the parent get into FUTEX_WAIT (either way it must come back rung)
    pd3::ring_agent(c);
    _exit(0);
  }
  CHECK(d.sleep(armed, &kLong));
  d.disarm(false);
  int status = 0;
  CHECK_EQ(waitpid(child, &status, 0), child);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(doorbell_stress_many_host_publishers_one_waker_per_sleep) {
  // Several host threads publish numbered items and ring_agent; the agent sleeps only on the futex.
  // The first ring that sees it asleep takes the announcement back to AWAKE (one wake per sleep):
  // a publisher that loses that race must still have its item seen, by the woken agent's look or
  // by its next arm's. A lost hand-off shows up as a timeout with work pending.
  auto c = std::make_unique<pd3_control>();
  pd3::ShmDma dma(reinterpret_cast<uint8_t*>(c.get()), sizeof(pd3_control));
  pd3::AgentDoorbell d;
  REQUIRE(d.open(&dma) == PD3_OK);
  constexpr uint32_t kPublishers = 3;
  const uint64_t per = 10000 * pd3test::stress_scale();
  std::atomic<uint64_t> published{0};
  uint64_t taken = 0, sleeps = 0, lost = 0;
  std::thread consumer([&] {
    while (taken < kPublishers * per) {
      // acquire: pairs with the publishers' release increments; items below are "done".
      if (published.load(std::memory_order_acquire) > taken) {
        taken = published.load(std::memory_order_acquire);  // acquire: as above
        continue;
      }
      const uint32_t armed = d.arm(PD3_AGENT_SLEEPING);
      if (published.load(std::memory_order_acquire) > taken) {  // acquire: as above
        d.disarm(false);
        continue;
      }
      ++sleeps;
      const bool rung = d.sleep(armed, &kLong);
      if (!rung && published.load(std::memory_order_acquire) > taken) ++lost;  // acquire: as above
      d.disarm(false);
    }
  });
  std::vector<std::thread> publishers;
  for (uint32_t t = 0; t < kPublishers; ++t) {
    publishers.emplace_back([&, t] {
      for (uint64_t i = 0; i < per; ++i) {
        published.fetch_add(1, std::memory_order_release);  // release: the consumer's acquire sees it
        pd3::ring_agent(c.get());
        if ((i + t) % 32 == 0) std::this_thread::yield();
      }
    });
  }
  for (auto& p : publishers) p.join();
  consumer.join();
  CHECK_EQ(taken, kPublishers * per);
  CHECK_EQ(lost, 0u);
  CHECK(sleeps > 0);
  std::printf("    %llu items from %u publishers, %llu sleeps, %u rings\n", (unsigned long long)taken, kPublishers,
              (unsigned long long)sleeps, c->agent_doorbell);
}
