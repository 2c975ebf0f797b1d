// instant_agent.cpp — an agent that answers every request of a host segment at once, from memory:
// no memory server, no sockets, no sleep (it polls the request ring). `bench transfer` runs the
// offloaded host against it as an extra row, so the host library's own cost per request shows apart
// from what waiting for a real agent adds (the host sleeping and waking, colder caches after each
// wake). Not an agent for use: reads return zeros, writes are dropped.
//
// Usage: pd3_bench_instant_agent SEGMENT   (runs until SIGTERM or SIGINT, then prints one JSON line,
// {"answered":N}; exit 0, or 1 when it cannot attach or finds the request ring corrupt)
#include <csignal>
#include <cstdio>
#include <ctime>
#include <memory>
#include <vector>

#include "dpu/agent_session.hpp"

namespace {

volatile std::sig_atomic_t g_stop = 0;

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// The answer's data: zeros for a READ, the reply for a CONTROL ALLOCATE, nothing otherwise.
struct Answer {
  const void* data = nullptr;
  uint32_t size = 0;
};

Answer answer(const pd3_request& r, const std::vector<uint8_t>& zeros, pd3_alloc_reply* alloc) {
  const uint32_t op = pd3_op_of(r.op_id);
  if (op == PD3_OP_READ) return {zeros.data(), r.size};
  if (op == PD3_OP_CONTROL && r.region == PD3_CTL_ALLOCATE) {
    *alloc = {1, r.size};  // local region 1 of server 0: every allocation gets the same one
    return {alloc, sizeof *alloc};
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: pd3_bench_instant_agent SEGMENT\n");
    return 2;
  }
  std::unique_ptr<pd3::AgentSession> session;
  if (const int rc = pd3::AgentSession::attach(argv[1], &session); rc != PD3_OK) {
    std::fprintf(stderr, "instant agent: attach %s: %s (%s)\n", argv[1], pd3_status_name(rc), pd3_last_error());
    return 1;
  }
  std::signal(SIGTERM, [](int) { g_stop = 1; });
  std::signal(SIGINT, [](int) { g_stop = 1; });
  // A READ's answer fits half the response ring (the host refuses larger ones), so this covers it.
  const std::vector<uint8_t> zeros(size_t(session->dma().read64(PD3_CTL(resp_size))) / 2, 0);
  uint64_t answered = 0, acked = 0, last_beat = 0;
  while (!g_stop) {
    const uint64_t now = now_ns();
    if (now - last_beat > 50'000'000) {  // the host takes 1 s without a beat for a dead agent
      session->beat();
      last_beat = now;
    }
    const uint64_t fence = session->request_fence();
    const int n = session->requests().drain(1024, fence, [&](const pd3::RequestView& v) {
      if (!v.has_header) return;
      pd3_alloc_reply alloc{};
      const Answer a = v.status == PD3_OK ? answer(v.hdr, zeros, &alloc) : Answer{};
      if (session->responses().add(v.hdr.op_id, v.status, a.data, a.size) == PD3_E_AGAIN) {
        session->responses().flush();  // the ring is full: publish what is staged, then wait for room
        while (!g_stop && session->responses().add(v.hdr.op_id, v.status, a.data, a.size) == PD3_E_AGAIN) {
        }
      }
      ++answered;
    });
    if (n < 0) {
      std::fprintf(stderr, "instant agent: the request ring is corrupt\n");
      return 1;
    }
    session->responses().flush();
    if (fence != acked) {
      session->ack_fence(fence);
      acked = fence;
    }
  }
  std::printf("{\"answered\":%llu}\n", (unsigned long long)answered);
  return 0;
}
