// engine_stats.cpp — the Transfer Engine's statistics (Engine, engine.hpp): the gauges the engine
// thread refreshes (update_gauges), and EngineStats and the STATS reply's text read from any
// thread (stats(), stats_text()). The counters themselves: engine_counters.hpp.
#include <string>

#include "common/transport_codec.hpp"
#include "dpu/engine.hpp"

namespace pd3 {

EngineStats Engine::stats() const {
  EngineStats s;
#define PD3_LOAD_FIELD(name) s.name = counters_.name.load(std::memory_order_relaxed);  // relaxed: see EngineCounters
  PD3_ENGINE_COUNTER_FIELDS(PD3_LOAD_FIELD)
#undef PD3_LOAD_FIELD
  if (prefetch_) {  // set before the thread starts and kept until destruction: safe to read here
    const LatencyHistogram::Snapshot lead = prefetch_->prefetcher().lead_histogram();
    s.prefetch_lead_p50_ns = lead.quantile(0.5);
    s.prefetch_lead_p99_ns = lead.quantile(0.99);
    const LatencyHistogram::Snapshot lag = prefetch_->capture_lag();
    s.mirror_capture_lag_count = lag.total;
    s.mirror_capture_lag_p50_ns = lag.quantile(0.5);
    s.mirror_capture_lag_p99_ns = lag.quantile(0.99);
  }
  const DmaCounts d = session_->dma().counts();  // session_ is set before the thread starts
  s.dma_reads = d.reads;
  s.dma_read_bytes = d.read_bytes;
  s.dma_writes = d.writes;
  s.dma_write_bytes = d.write_bytes;
  s.dma_atomics = d.atomics;
  s.dma_fences = d.fences;
  s.dma_wakes = d.wakes;
  s.dma_wait_ns = d.wait_ns;
  return s;
}

std::string Engine::stats_text() const {
  const EngineStats s = stats();
  std::string text;
#define PD3_STATS_LINE(name) text += #name "=" + std::to_string(s.name) + "\n";
  PD3_ENGINE_STATS_FIELDS(PD3_STATS_LINE)
#undef PD3_STATS_LINE
  if (text.size() > PD3_STATS_REPLY_MAX) text.resize(PD3_STATS_REPLY_MAX);
  return text;
}

void Engine::update_gauges(uint64_t now) {
  set(counters_.zone_consumed, session_->counters().get(AgentCounters::kLzConsumed));
  set(counters_.zone_reclaimed_unconsumed, session_->counters().get(AgentCounters::kLzReclaimedUnconsumed));
  uint64_t up = 0, inflight = 0, frames = 0, sent = 0, received = 0;
  for (const auto& e : links_) {
    const ServerLink& link = *e.link;
    up += link.up();
    inflight += link.inflight_records();
    frames += link.frames_sent();
    sent += link.bytes_sent();
    received += link.bytes_received();
  }
  set(counters_.servers_up, up);
  set(counters_.inflight_records, inflight);
  set(counters_.frames_sent, frames);
  set(counters_.bytes_sent, sent);
  set(counters_.bytes_received, received);
  set(counters_.response_backlog, replies_.size());
  // A read of the producers' tail: at most once a millisecond (they CAS that line per request).
  if (now - ring_gauge_ns_ >= kGaugesEveryNs) {
    set(counters_.request_ring_bytes, session_->requests().backlog());
    ring_gauge_ns_ = now;
  }
  if (prefetch_) {
    const PrefetcherStats p = prefetch_->prefetcher().stats();
    set(counters_.prefetch_reads, p.reads);
    set(counters_.prefetch_writes, p.writes);
    set(counters_.prefetch_deletes, p.deletes);
    set(counters_.prefetch_host_view_hits, p.host_view_hits);
    set(counters_.prefetch_issued, p.requests);
    set(counters_.prefetch_deduplicated, p.deduplicated);
    set(counters_.prefetch_cancelled, p.cancelled);
    set(counters_.prefetch_produced, p.produced);
    set(counters_.prefetch_not_found, p.not_found);
    set(counters_.prefetch_lead_count, p.lead_count);
    set(counters_.prefetch_lead_sum_ns, p.lead_sum_ns);
    set(counters_.prefetch_dropped_accesses, prefetch_->dropped_accesses());
    set(counters_.prefetch_lost_writes, prefetch_->lost_writes());
    const CaptureStats c = prefetch_->capture_stats();
    set(counters_.mirror_packets, c.packets);
    set(counters_.mirror_bytes, c.bytes);
    set(counters_.mirror_flows, c.flows);
    set(counters_.mirror_gaps, c.gaps);
    set(counters_.mirror_parse_errors, c.parse_errors);
    set(counters_.mirror_kernel_drops, c.kernel_drops);
    set(counters_.mirror_polls, c.polls);
    set(counters_.mirror_wakeups, c.wakeups);
    set(counters_.mirror_spins, c.spins);
    set(counters_.mirror_spin_hits, c.spin_hits);
    set(counters_.mirror_cpu_ns, c.cpu_ns);
    set(counters_.mirror_duplicates, c.duplicates);
    set(counters_.mirror_truncated, c.truncated);
    set(counters_.mirror_link_downs, c.link_downs);
    set(counters_.mirror_link_up, c.link_up);
    set(counters_.prefetch_resets, c.resets);
  }
}

}  // namespace pd3
