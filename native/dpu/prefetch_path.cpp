// prefetch_path.cpp — see prefetch_path.hpp.
#include "dpu/prefetch_path.hpp"

#include <arpa/inet.h>

#include "common/error.hpp"
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

  int init(const PrefetchSetup& s, HostView* hv, LzProducer* zone, PrefetchPort* port, LogQueue* log) {
    zone_ = zone;
    log_ = log;
    if (const int rc = Prefetcher::create(s.prefetcher, hv, zone, port, &prefetcher_)) return rc;
    ParserHandle parser;
    if (const int rc = load_parser(s.parser.c_str(), &parser)) return rc;
    if (const int rc = RequestTap::create(RequestTapOptions{}, std::move(parser), &queue_, &tap_)) return rc;
    if (s.backend == "tee") {
      TeeProxyOptions o;
      o.listen = s.listen;
      o.app = s.app;
      return TeeProxy::start(o, tap_->callbacks(), &tee_);
    }
    MirrorOptions o;
    o.interface = s.interface;
    in_addr a{};
    if (inet_pton(AF_INET, s.app.host.c_str(), &a) != 1)
      return fail(PD3_E_INVAL, "prefetch: app address '%s' is not IPv4", s.app.host.c_str());
    o.ip = ntohl(a.s_addr);
    o.port = s.app.port;
    return PacketMirror::start(o, tap_->callbacks(), &mirror_);
  }

  bool poll(uint64_t now) override {
    // A missed WRITE or DELETE of some unknown key: no item or answer in flight can be trusted.
    // relaxed: single-writer statistics; a late view only delays the reset to the next poll.
    const uint64_t lost = queue_.lost_writes() + tap_->stats().desyncs;
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
  uint16_t tee_port() const override { return tee_ ? tee_->port() : 0; }
  CaptureStats capture_stats() const override {
    CaptureStats c;
    const RequestTapStats t = tap_->stats();
    c.bytes = t.bytes_delivered;
    c.flows = t.flows_total;
    c.parse_errors = t.parse_errors + t.resync_rejects;
    if (mirror_) {
      const MirrorStats m = mirror_->stats();
      c.packets = m.frames;
      c.gaps = m.flows.gaps;
      c.kernel_drops = m.kernel_drops;
    }
    c.resets = resets_;
    return c;
  }
  void stop() override {
    if (mirror_) mirror_->stop();
    if (tee_) tee_->stop();
  }

 private:
  AccessQueue queue_;
  LzProducer* zone_ = nullptr;
  LogQueue* log_ = nullptr;
  uint64_t lost_seen_ = 0;  // lost writes + desyncs at the last poll (engine thread)
  uint64_t resets_ = 0;     // written by the engine thread, read by capture_stats() on the same thread
  std::unique_ptr<Prefetcher> prefetcher_;
  std::unique_ptr<RequestTap> tap_;
  std::unique_ptr<PacketMirror> mirror_;
  std::unique_ptr<TeeProxy> tee_;
};

}  // namespace

int PrefetchPath::start(const PrefetchSetup& setup, HostView* host_view, LzProducer* zone, PrefetchPort* port,
                        LogQueue* log, std::unique_ptr<PrefetchPath>* out) {
  if (setup.backend != "afpacket" && setup.backend != "tee")
    return fail(PD3_E_INVAL, "prefetch backend '%s': use afpacket or tee", setup.backend.c_str());
  if (setup.app.port == 0 || (setup.backend == "tee" && setup.listen.host.empty()))
    return fail(PD3_E_INVAL, "prefetch: the app's address (and, for tee, a listen address) is required");
  if (setup.issuer != "agent" && setup.issuer != "host")
    return fail(PD3_E_INVAL, "prefetch issuer '%s': use agent or host", setup.issuer.c_str());
  if (setup.hint_timeout_ms == 0) return fail(PD3_E_INVAL, "prefetch: hint_timeout_ms must be > 0");
  if (setup.queue_bytes < 4096 || (setup.queue_bytes & (setup.queue_bytes - 1)) != 0)
    return fail(PD3_E_INVAL, "prefetch: queue_bytes %llu is not a power of two >= 4096",
                (unsigned long long)setup.queue_bytes);
  auto p = std::make_unique<Path>(setup.queue_bytes);
  if (const int rc = p->init(setup, host_view, zone, port, log)) return rc;
  log->log(LogLevel::kInfo, "prefetch.started", "prefetching with parser '%s' on %s, app %s, issued by the %s",
           setup.parser.c_str(), setup.backend.c_str(), setup.app.str().c_str(), setup.issuer.c_str());
  *out = std::move(p);
  return PD3_OK;
}

}  // namespace pd3
