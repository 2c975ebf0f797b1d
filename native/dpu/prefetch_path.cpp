// prefetch_path.cpp — see prefetch_path.hpp.
#include "dpu/prefetch_path.hpp"

#include <arpa/inet.h>

#include <atomic>

#include "common/error.hpp"
#include "dpu/dpdk_mirror.hpp"
#include "dpu/flow_event_queue.hpp"
#include "dpu/packet_mirror.hpp"
#include "dpu/request_tap.hpp"
#include "dpu/tee_proxy.hpp"
#include "parsers/plugin_loader.hpp"
#include "pd3/status.h"

namespace pd3 {

namespace {

constexpr size_t kDrainBatch = 1024;

// The implementation: members are destroyed in reverse order, so the backend (which calls into
// the tap, which pushes into the queue) goes first.
class Path final : public PrefetchPath {
 public:
  explicit Path(uint64_t queue_bytes) : queue_(queue_bytes) {}
  ~Path() override { stop(); }

  int init(const PrefetchSetup& s, HostView* hv, LzProducer* zone, PrefetchPort* port, LogQueue* log,
           AgentDoorbell* doorbell) {
    setup_ = s;
    doorbell_ = doorbell;
    zone_ = zone;
    log_ = log;
    if (const int rc = Prefetcher::create(s.prefetcher, hv, zone, port, &prefetcher_)) return rc;
    if (s.external_parser) return PD3_OK;  // the backend starts when the parser is attached
    ParserHandle parser;
    if (const int rc = load_parser(s.parser.c_str(), &parser)) return rc;
    if (const int rc = RequestTap::create(RequestTapOptions{}, std::move(parser), &queue_, &tap_storage_)) return rc;
    publish_tap();
    FlowCallbacks cb = tap_storage_->callbacks();
    // The engine may be asleep: wake it once a delivery has queued accesses.
    cb.deliver = [this, deliver = std::move(cb.deliver)](uint64_t id, const uint8_t* data, size_t len, bool gap) {
      deliver(id, data, len, gap);
      if (doorbell_) doorbell_->ring();
    };
    return start_backend(std::move(cb));
  }

  int attach_external(ParserHandle parser, std::function<void()> wake) override {
    if (!setup_.external_parser) return fail(PD3_E_INVAL, "prefetch: the parser is not external");
    if (tap_storage_) return fail(PD3_E_INVAL, "prefetch: an external parser is attached already");
    if (!parser) return fail(PD3_E_INVAL, "prefetch: no parser");
    flow_events_ = std::make_unique<FlowEventQueue>(setup_.flow_queue_bytes, std::move(wake));
    if (const int rc = RequestTap::create(RequestTapOptions{}, std::move(parser), &queue_, &tap_storage_)) return rc;
    publish_tap();
    return start_backend(flow_events_->callbacks());
  }

  size_t pump_external(size_t max) override {
    if (!flow_events_ || !tap_storage_) return 0;
    flow_events_->rearm();
    RequestTap& tap = *tap_storage_;
    const size_t n = flow_events_->drain(max, [&](const FlowEvent& e) {
      switch (e.kind) {
        case FlowEvent::Kind::kOpen:
          return tap.open(e.flow_id, e.flag);
        case FlowEvent::Kind::kData:
          return tap.deliver(e.flow_id, e.data, e.len, e.flag, e.capture_ns);
        case FlowEvent::Kind::kClose:
          return tap.close(e.flow_id);
      }
    });
    if (n > 0 && doorbell_) doorbell_->ring();
    return n;
  }

  bool has_work() const override { return !queue_.empty() || prefetcher_->host_view_ready(); }

  bool poll(uint64_t now) override {
    // acquire: pairs with publish_tap(); the tap is fully built before its stats are read.
    const RequestTap* tap = tap_.load(std::memory_order_acquire);
    // A missed WRITE or DELETE of some unknown key: no item or answer in flight can be trusted.
    // relaxed: single-writer statistics; a late view only delays the reset to the next poll.
    const uint64_t lost = queue_.lost_writes() + (tap ? tap->stats().desyncs : 0);
    if (lost != lost_seen_) {
      lost_seen_ = lost;
      ++resets_;
      const uint32_t withdrawn = zone_->invalidate_all();
      prefetcher_->cancel_all();
      log_->log(LogLevel::kWarn, "prefetch.reset",
                "a client write may have been missed (full queue or a flow out of sync): %u zone items withdrawn, "
                "prefetches in flight cancelled", withdrawn);
    }
    const size_t n = queue_.drain(kDrainBatch, [&](const AccessRecord& a) { prefetcher_->on_access(a, now); });
    prefetcher_->pump(now);
    return n > 0;
  }
  Prefetcher& prefetcher() override { return *prefetcher_; }
  uint64_t dropped_accesses() const override { return queue_.dropped(); }
  uint64_t lost_writes() const override { return queue_.lost_writes(); }
  uint16_t tee_port() const override {
    // acquire: pairs with start_backend's release; the proxy is fully started.
    const TeeProxy* tee = tee_ptr_.load(std::memory_order_acquire);
    return tee ? tee->port() : 0;
  }
  CaptureStats capture_stats() const override {
    CaptureStats c;
    // acquire: see poll().
    if (const RequestTap* tap = tap_.load(std::memory_order_acquire)) {
      const RequestTapStats t = tap->stats();
      c.bytes = t.bytes_delivered;
      c.flows = t.flows_total;
      c.parse_errors = t.parse_errors + t.resync_rejects;
    }
    // acquire: pairs with start_backend's release.
    if (const PacketMirror* mirror = mirror_ptr_.load(std::memory_order_acquire)) {
      const MirrorStats m = mirror->stats();
      c.packets = m.frames;
      c.gaps = m.flows.gaps;
      c.kernel_drops = m.kernel_drops;
      c.polls = m.polls;
      c.wakeups = m.wakeups;
      c.spins = m.spins;
      c.spin_hits = m.spin_hits;
      c.cpu_ns = m.cpu_ns;
    }
    // acquire: pairs with start_backend's release.
    if (const DpdkMirror* dpdk = dpdk_ptr_.load(std::memory_order_acquire)) {
      const DpdkMirrorStats d = dpdk->stats();
      c.packets = d.frames;
      c.gaps = d.flows.gaps;
      c.kernel_drops = d.rx_missed;
      c.polls = d.sleeps;
      c.spins = d.empty_polls;
      c.cpu_ns = d.cpu_ns;
      c.duplicates = d.frames_duplicate;
      c.truncated = d.frames_truncated;
      c.link_downs = d.link_downs;
      c.link_up = d.link_up;
    }
    if (const FlowEventQueue* q = events_ptr_.load(std::memory_order_acquire)) c.queue_dropped_bytes = q->stats().dropped_bytes;
    c.resets = resets_;
    return c;
  }
  LatencyHistogram::Snapshot capture_lag() const override {
    // acquire: pairs with start_backend's release; the mirror lives as long as this path.
    if (const PacketMirror* mirror = mirror_ptr_.load(std::memory_order_acquire)) return mirror->capture_lag();
    // acquire: as above, for the DPDK mirror.
    if (const DpdkMirror* dpdk = dpdk_ptr_.load(std::memory_order_acquire)) return dpdk->capture_lag();
    return {};
  }
  void stop() override {
    if (mirror_) mirror_->stop();
    if (dpdk_) dpdk_->stop();
    if (tee_) tee_->stop();
  }

 private:
  // release: whoever acquires the pointer sees the tap fully built.
  void publish_tap() { tap_.store(tap_storage_.get(), std::memory_order_release); }

  // The app's IPv4 address, host order.
  int app_ipv4(uint32_t* out) const {
    in_addr a{};
    if (inet_pton(AF_INET, setup_.app.host.c_str(), &a) != 1)
      return fail(PD3_E_INVAL, "prefetch: app address '%s' is not IPv4", setup_.app.host.c_str());
    *out = ntohl(a.s_addr);
    return PD3_OK;
  }

  int start_backend(FlowCallbacks callbacks) {
    int rc;
    if (setup_.backend == "tee") {
      TeeProxyOptions o;
      o.listen = setup_.listen;
      o.app = setup_.app;
      rc = TeeProxy::start(o, std::move(callbacks), &tee_);
    } else if (setup_.backend == "dpdk") {
      DpdkMirrorOptions o = setup_.dpdk;
      if (const int bad = app_ipv4(&o.ip)) return bad;
      o.app_port = setup_.app.port;
      o.log = log_;
      rc = DpdkMirror::start(o, std::move(callbacks), &dpdk_);
    } else {
      MirrorOptions o;
      o.interface = setup_.interface;
      if (const int bad = app_ipv4(&o.ip)) return bad;
      o.port = setup_.app.port;
      if (!parse_mirror_ring(setup_.mirror_ring, &o.ring))
        return fail(PD3_E_INVAL, "prefetch: mirror ring '%s': use v2 or v3", setup_.mirror_ring.c_str());
      o.spin_us = setup_.mirror_spin_us;
      o.slice_us = setup_.mirror_slice_us;
      rc = PacketMirror::start(o, std::move(callbacks), &mirror_);
    }
    // release: the engine thread's acquire loads see the backends (and the queue) fully built.
    tee_ptr_.store(tee_.get(), std::memory_order_release);
    mirror_ptr_.store(mirror_.get(), std::memory_order_release);
    dpdk_ptr_.store(dpdk_.get(), std::memory_order_release);
    events_ptr_.store(flow_events_.get(), std::memory_order_release);
    return rc;
  }

  PrefetchSetup setup_;
  AgentDoorbell* doorbell_ = nullptr;
  AccessQueue queue_;
  LzProducer* zone_ = nullptr;
  LogQueue* log_ = nullptr;
  uint64_t lost_seen_ = 0;  // lost writes + desyncs at the last poll (engine thread)
  uint64_t resets_ = 0;     // written by the engine thread, read by capture_stats() on the same thread
  std::unique_ptr<Prefetcher> prefetcher_;
  // Set once (init, or attach_external on the parsing thread) and read by the engine thread
  // through the atomic pointers.
  std::unique_ptr<FlowEventQueue> flow_events_;
  std::unique_ptr<RequestTap> tap_storage_;
  std::unique_ptr<PacketMirror> mirror_;
  std::unique_ptr<TeeProxy> tee_;
  std::unique_ptr<DpdkMirror> dpdk_;
  std::atomic<const RequestTap*> tap_{nullptr};
  std::atomic<const PacketMirror*> mirror_ptr_{nullptr};
  std::atomic<const TeeProxy*> tee_ptr_{nullptr};
  std::atomic<const DpdkMirror*> dpdk_ptr_{nullptr};
  std::atomic<const FlowEventQueue*> events_ptr_{nullptr};
};

}  // namespace

int PrefetchPath::start(const PrefetchSetup& setup, HostView* host_view, LzProducer* zone, PrefetchPort* port,
                        LogQueue* log, AgentDoorbell* doorbell, std::unique_ptr<PrefetchPath>* out) {
  if (setup.backend != "afpacket" && setup.backend != "tee" && setup.backend != "dpdk")
    return fail(PD3_E_INVAL, "prefetch backend '%s': use afpacket, tee or dpdk", setup.backend.c_str());
  if (setup.app.port == 0 || (setup.backend == "tee" && setup.listen.host.empty()))
    return fail(PD3_E_INVAL, "prefetch: the app's address (and, for tee, a listen address) is required");
  if (MirrorRing ring; !parse_mirror_ring(setup.mirror_ring, &ring))
    return fail(PD3_E_INVAL, "prefetch: mirror ring '%s': use v2 or v3", setup.mirror_ring.c_str());
  if (setup.mirror_spin_us > kMirrorMaxSpinUs)
    return fail(PD3_E_INVAL, "prefetch: mirror spin %u us outside 0..%u", setup.mirror_spin_us, kMirrorMaxSpinUs);
  if (setup.mirror_slice_us > kMirrorMaxSliceUs)
    return fail(PD3_E_INVAL, "prefetch: mirror slice %u us outside 0..%u", setup.mirror_slice_us, kMirrorMaxSliceUs);
  if (setup.issuer != "agent" && setup.issuer != "host")
    return fail(PD3_E_INVAL, "prefetch issuer '%s': use agent or host", setup.issuer.c_str());
  if (setup.hint_timeout_ms == 0) return fail(PD3_E_INVAL, "prefetch: hint_timeout_ms must be > 0");
  if (setup.external_parser &&
      (setup.flow_queue_bytes < 4ull * FlowEventQueue::kMaxChunk || (setup.flow_queue_bytes & (setup.flow_queue_bytes - 1)) != 0))
    return fail(PD3_E_INVAL, "prefetch: flow_queue_bytes %llu is not a power of two >= %u",
                (unsigned long long)setup.flow_queue_bytes, 4 * FlowEventQueue::kMaxChunk);
  if (setup.queue_bytes < 4096 || (setup.queue_bytes & (setup.queue_bytes - 1)) != 0)
    return fail(PD3_E_INVAL, "prefetch: queue_bytes %llu is not a power of two >= 4096",
                (unsigned long long)setup.queue_bytes);
  auto p = std::make_unique<Path>(setup.queue_bytes);
  if (const int rc = p->init(setup, host_view, zone, port, log, doorbell)) return rc;
  std::string backend = setup.backend;
  if (setup.backend == "afpacket")
    backend += " (" + setup.mirror_ring + " ring, spin " + std::to_string(setup.mirror_spin_us) + " us, slice " +
               std::to_string(setup.mirror_slice_us) + " us)";
  if (setup.backend == "dpdk")
    backend += " (port " + setup.dpdk.port + ", spin " + std::to_string(setup.dpdk.spin_us) + " us, sleep " +
               std::to_string(setup.dpdk.sleep_min_us) + ".." + std::to_string(setup.dpdk.sleep_max_us) + " us)";
  log->log(LogLevel::kInfo, "prefetch.started", "prefetching with parser '%s' on %s, app %s, issued by the %s",
           setup.parser.c_str(), backend.c_str(), setup.app.str().c_str(), setup.issuer.c_str());
  *out = std::move(p);
  return PD3_OK;
}

}  // namespace pd3
