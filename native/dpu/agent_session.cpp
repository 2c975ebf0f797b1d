// agent_session.cpp — attach to a host segment (through HostDma) and keep its heartbeat fresh.
#include "dpu/agent_session.hpp"

#include <time.h>
#include <unistd.h>

#include "common/error.hpp"
#include "dpu/latency_dma.hpp"
#include "pd3/status.h"

namespace pd3 {

namespace {

// Checks the cursors the agent will act on, in one read of the control block's first lines. The
// agent owns one side of every cursor pair (and all Loading Zone cursors), so reading its own side
// first gives an exact check even while the host keeps running: impossible values (head past tail,
// more in flight than fits) would make the agent lose requests or spin, so such a segment is refused.
int check_cursors(HostDma& dma) {
  pd3_control c{};
  // One read of lines 0-9; the host moves req_tail, so that pair is read again, head first.
  dma.read(0, &c, PD3_CTL(req_fence));
  const uint64_t req_head = dma.read64(PD3_CTL(req_head));
  const uint64_t req_tail = dma.read64(PD3_CTL(req_tail));
  // One cursor pair and the capacity between them.
  struct Pair {
    const char* what;
    uint64_t head, tail, capacity;
  };
  const Pair pairs[] = {
      {"request ring", req_head, req_tail, c.req_size},
      {"response ring", c.resp_head, c.resp_tail, c.resp_size},
      {"loading zone data", c.lz_data_head, c.lz_data_tail, c.lz_data_size},
      {"loading zone items", c.lz_head_seq, c.lz_tail_seq, c.lz_desc_count},
  };
  for (const Pair& p : pairs)
    if (p.head > p.tail || p.tail - p.head > p.capacity)
      return fail(PD3_E_BAD_LAYOUT, "%s cursors are impossible: head %llu, tail %llu, capacity %llu", p.what,
                  (unsigned long long)p.head, (unsigned long long)p.tail, (unsigned long long)p.capacity);
  if (c.lz_head_seq == 0) return fail(PD3_E_BAD_LAYOUT, "loading zone head seq is 0 (seqs start at 1)");
  return PD3_OK;
}

}  // namespace

AgentSession::AgentSession(std::unique_ptr<HostDma> dma, const HostLayout& layout)
    : dma_(std::move(dma)), layout_(layout), counters_(*dma_), requests_(*dma_, layout_, counters_),
      responses_(*dma_, layout_, counters_), zone_(*dma_, layout_, counters_) {}

int AgentSession::attach(const char* name, std::unique_ptr<AgentSession>* out, const DmaSetup& setup) {
  if (setup.latency_ns > int64_t(LatencyDma::kMaxLatencyNs))
    return fail(PD3_E_INVAL, "DMA latency %lld ns above %llu", (long long)setup.latency_ns,
                (unsigned long long)LatencyDma::kMaxLatencyNs);
  std::unique_ptr<ShmDma> shm;
  if (const int rc = ShmDma::open(name, &shm)) return rc;
  std::unique_ptr<HostDma> dma;
  if (setup.latency_ns >= 0)
    dma = std::make_unique<LatencyDma>(std::move(shm), uint64_t(setup.latency_ns));
  else
    dma = std::move(shm);
  if (const int rc = check_cursors(*dma)) return rc;
  const HostLayout layout = HostLayout::read(*dma);
  out->reset(new AgentSession(std::move(dma), layout));
  AgentSession& s = **out;
  s.responses_.repair();
  // agent_pid and agent_attaches share a word: one read, then one write after a fence, so a host
  // that sees the new count also sees the repaired response ring. (One agent attaches at a time.)
  const uint64_t word = s.dma_->read64(PD3_CTL(agent_pid));
  const uint64_t attaches = (word >> 32) + 1;
  s.dma_->fence();
  s.dma_->write64(PD3_CTL(agent_pid), (attaches << 32) | uint32_t(getpid()));
  s.beat();
  return PD3_OK;
}

void AgentSession::beat() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  // Posted: the host only compares it with its clock (pd3_host_agent_alive).
  dma_->write64(PD3_CTL(agent_heartbeat_ns), uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec));
}

void AgentSession::ack_fence(uint64_t fence) {
  dma_->fence();  // every response published before lands before the acknowledgement
  dma_->write64(PD3_CTL(agent_fence_ack), fence);
}

}  // namespace pd3
