// transfer_engine.cpp — the Transfer Engine's thread: takes host requests from the request ring,
// routes them to memory-server links, receives responses into the unified response buffer, keeps
// Host View and the Loading Zone right (Table 2) and publishes responses to the host.
#include "dpu/transfer_engine.hpp"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/epoll.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "common/tenant_credential.hpp"
#include "common/error.hpp"
#include "common/transport_codec.hpp"
#include "dpu/agent_doorbell.hpp"
#include "dpu/agent_session.hpp"
#include "dpu/hint_table.hpp"
#include "dpu/host_replies.hpp"
#include "dpu/link_table.hpp"
#include "dpu/response_buffer.hpp"
#include "dpu/server_link.hpp"
#include "common/unique_fd.hpp"
#include "pd3/record.h"
#include "pd3/status.h"

namespace pd3 {

namespace {

constexpr uint64_t kUs = 1000;
constexpr uint64_t kMs = 1000000;
constexpr uint64_t kBeatEveryNs = 100 * kUs;  // beat this often while busy
constexpr uint64_t kBeatAtLeastNs = 900 * kUs;  // and never sleep past this (a beat per ms at worst)
constexpr uint64_t kGaugesEveryNs = 1 * kMs;    // gauges of an idle engine are refreshed this often
constexpr int kMaxEvents = 64;
constexpr uint64_t kDefaultHostViewKeys = 1u << 20;
constexpr uint64_t kNoRingPosition = ~uint64_t{0};  // a record that answers no host request (never fenced)
constexpr size_t kMaxReplyBacklogForHints = 2 * PD3_MAX_INFLIGHT;  // replies owed to a host not polling
// Links at most, those of servers that joined the pool at run time included: placement tracks the
// servers an allocation tried in a 64-bit mask of link indexes.
constexpr size_t kMaxLinks = kMaxPlacementServers;

// The engine's counters. One writer (the engine thread) and any number of readers (stats()):
// every access is relaxed because each counter is an independent statistic that publishes no
// other memory, and a reader only needs some recent value of each.
struct Counters {
#define PD3_COUNTER_FIELD(name) std::atomic<uint64_t> name{0};
  PD3_ENGINE_COUNTER_FIELDS(PD3_COUNTER_FIELD)
#undef PD3_COUNTER_FIELD
};

// Single writer: a relaxed load and store instead of a locked read-modify-write (see Counters).
void bump(std::atomic<uint64_t>& counter, uint64_t n = 1) {
  counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}
void set(std::atomic<uint64_t>& gauge, uint64_t v) { gauge.store(v, std::memory_order_relaxed); }

// Calls fn(key, key_len) for each key of a data record (pd3/record.h, the built-in format).
template <class Fn>
void for_each_key(const uint8_t* data, uint64_t len, Fn&& fn) {
  uint64_t at = 0;
  pd3_kv_entry e;
  while (pd3_kv_next(data, len, &at, &e)) fn(data + e.key_off, e.key_len);
}

// The implementation behind TransferEngine.
class Engine final : public TransferEngine, private PrefetchPort {
 public:
  explicit Engine(const EngineOptions& options)
      : options_(options),
        via_host_(!options.prefetch.parser.empty() && options.prefetch.issuer == "host"),
        placement_(options.placement, uint64_t(options.refraction_ms) * 1'000'000, now_ns()) {}
  ~Engine() override { stop(); }

  int init();
  void launch();

  void stop() override;
  EngineStats stats() const override;
  std::vector<ServerState> servers() const override;
  int set_member(const Endpoint& endpoint, bool member) override;
  LogQueue& log() override { return log_; }
  uint16_t tee_port() const override { return prefetch_ ? prefetch_->tee_port() : 0; }
  PrefetchPath* prefetch_path() override { return prefetch_.get(); }

 private:
  void run();
  bool service_sockets(uint64_t now);
  bool service_timers(uint64_t now);
  bool take_requests(uint64_t now);
  bool dispatch(uint64_t now);
  bool publish();
  void idle_wait(uint64_t now, uint64_t last_beat);
  bool work_waiting() const;  // a request or a prefetch-path item waits (checked after arming)
  uint32_t idle_rounds_ = 0;  // sleeps since the last work: each doubles the next (to the max)
  void shutdown();

  // Routing (paper §6.1: requests to the server named by their region's top bits).
  void route(const RequestView& v, uint64_t now);
  int link_for_region(uint32_t region, int* status) const;
  int pick_allocate_link(uint32_t size, uint64_t tried, bool retry);
  void send_allocate(int link, const LinkRecord& meta, uint64_t now);
  void forward(int link, const uint8_t* record, uint32_t record_len, LinkRecord meta, uint64_t now);

  // Responses.
  int check_frame(const ServerLink& link, const ReceivedFrame& f) const;
  void deliver(int link, ReceivedFrame& f, uint64_t now);
  bool after_allocate(int link, const LinkRecord& req, int status, const TransportResponse& r, uint64_t now);
  void reply(uint64_t pos, uint16_t op_id, int status, uint32_t size = 0, const uint8_t* data = nullptr);
  void fail_request(uint64_t pos, uint16_t op_id, int status);
  void fail_records(const std::vector<LinkRecord>& records, int status);
  std::string stats_text() const;

  // Links.
  void apply_members();  // the membership changes set_member queued
  void add_link(const Endpoint& endpoint);
  void fail_link(int link, int status, const std::string& why, uint64_t now);
  void on_link_up(int link);
  void refresh_server(int link) { links_.refresh(link, placement_.live(size_t(link))); }

  // Host View (Table 2).
  void run_host_view(HostViewOp op, std::vector<uint64_t>* hashes);

  // PrefetchPort: the prefetcher's records ride in the same frames as the host's.
  // `server` / `li`: the link index (the prefetcher's name for a server; see servers_up()).
  int send_prefetch(int server, uint16_t op_id, const uint8_t* key, uint16_t key_len, uint32_t max_size,
                    uint64_t now) override;
  uint32_t servers_up() const override;
  int queue_prefetch(int li, uint16_t op_id, const uint8_t* key, uint16_t key_len, uint32_t max_size,
                     bool may_defer, uint64_t now);
  // Issuer "host": the hint out, the host's PREFETCH back, and hints it never returned.
  int send_hint(int li, uint16_t op_id, const uint8_t* key, uint16_t key_len, uint32_t max_size, uint64_t now);
  void take_hinted_prefetch(const RequestView& v, uint64_t now);
  void expire_hints(uint64_t now);
  void update_gauges(uint64_t now);

  EngineOptions options_;
  const bool via_host_;  // prefetches go to the host as hints first (PrefetchSetup::issuer "host")
  std::unique_ptr<AgentSession> session_;
  uint64_t fence_ = 0;  // the host's fence, read at the start of this pass of the loop
  uint64_t ring_gauge_ns_ = 0;  // when request_ring_bytes was last read
  AgentDoorbell doorbell_;  // rung when accesses or Host View verdicts wait; declared first: outlives both
  std::unique_ptr<HostView> host_view_;
  std::unique_ptr<PrefetchPath> prefetch_;  // declared after host_view_ and doorbell_: destroyed before them
  std::vector<uint8_t> prefetch_record_;     // scratch for one PREFETCH record
  HintTable hints_;                          // issuer "host": hints the host has not returned yet
  std::unique_ptr<ResponseBuffer> buffer_;
  UniqueFd epoll_;
  LinkOptions link_options_;  // what every link is built with, those added at run time too
  LinkTable links_;  // the memory-server links, and what servers() reports of them
  HostReplies replies_;
  std::map<uint32_t, uint32_t> region_bytes_;  // region → capacity, for free-byte estimates
  Placement placement_;                  // where ALLOCATE goes
  std::vector<PlacementCandidate> candidates_;  // scratch for placement_.pick
  std::vector<uint64_t> erase_hashes_;   // this pass's written keys (Table 2: Del after ①)
  std::vector<uint64_t> insert_hashes_;  // this pass's read keys (Table 2: Add before ④)
  std::vector<uint8_t> verdicts_;
  std::vector<ReceivedFrame> received_;
  std::vector<LinkRecord> orphans_;
  bool ring_broken_logged_ = false;

  LogQueue log_;
  Counters counters_;

  // One membership change, from set_member (any thread) to the engine thread.
  struct MemberCommand {
    Endpoint endpoint;
    bool member;
  };
  std::mutex members_mu_;  // guards member_commands_
  std::vector<MemberCommand> member_commands_;
  std::atomic<bool> members_waiting_{false};  // member_commands_ may be non-empty: a hint for the loop

  std::thread thread_;
  std::mutex stop_mu_;  // serialises stop()
  std::atomic<bool> stop_{false};
  std::atomic<bool> first_round_done_{false};
};

int Engine::init() {
  if (const int rc = AgentSession::attach(options_.segment.c_str(), &session_, DmaSetup{options_.dma_latency_ns}))
    return rc;
  const bool prefetching = !options_.prefetch.parser.empty();
  if (doorbell_.open(&session_->dma()) != PD3_OK) return fail(PD3_E_SYS, "eventfd: %s", strerror(errno));
  if (options_.host_view) {
    HostViewOptions hv = options_.host_view_options;
    if (prefetching) hv.completions = &doorbell_;  // the prefetcher's lookups come back while we may sleep
    if (hv.capacity == 0) hv.capacity = kDefaultHostViewKeys;
    if (const int rc = HostView::create(hv, &host_view_))
      return fail(rc, "Host View of %llu keys in %u shards: %s", (unsigned long long)hv.capacity, hv.shards,
                  pd3_status_str(rc));
  }
  if (const int rc = ResponseBuffer::create(options_.response_buffer_bytes, &buffer_)) return rc;
  epoll_.reset(epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_.valid()) return fail(PD3_E_SYS, "epoll_create1: %s", strerror(errno));
  LinkOptions& lo = link_options_;
  lo.token = options_.token;
  lo.tenant = options_.tenant;
  lo.max_batch_records = options_.max_batch_records;
  lo.max_batch_bytes = options_.max_batch_bytes;
  lo.max_outstanding = options_.max_outstanding;
  lo.batch_delay_ns = uint64_t(options_.batch_delay_us) * kUs;
  lo.connect_timeout_ns = uint64_t(options_.connect_timeout_ms) * kMs;
  lo.reconnect_ns = uint64_t(options_.reconnect_ms) * kMs;
  lo.request_timeout_ns = uint64_t(options_.request_timeout_ms) * kMs;
  lo.response_buffer_bytes = options_.response_buffer_bytes;
  // A quarter of the buffer per frame keeps several frames in flight (pipelining) while the
  // buffer is shared; a record whose response alone is larger still goes, in a frame of its own.
  lo.frame_response_cap = options_.response_buffer_bytes / 4;
  for (size_t i = 0; i < options_.servers.size(); ++i)
    links_.install(i, std::make_unique<ServerLink>(options_.servers[i], uint32_t(i), epoll_.get(), lo), /*joined=*/false);
  if (prefetching) {
    if (const int rc = PrefetchPath::start(options_.prefetch, host_view_.get(), &session_->zone(), this, &log_,
                                           &doorbell_, &prefetch_))
      return rc;
  }
  return PD3_OK;
}

void Engine::launch() {
  thread_ = std::thread([this] {
    // The idle sleep is tens of µs: without this the kernel's default 50 µs timer slack would
    // more than double it, and every lone request would wait that long to be picked up.
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    run();
  });
  // acquire: pairs with the engine thread's release store once every server was tried once, so
  // servers() and the first requests see the connections made by then.
  first_round_done_.wait(false, std::memory_order_acquire);
}

void Engine::stop() {
  std::lock_guard lock(stop_mu_);
  // relaxed: the flag only ends the loop; join() orders everything the thread did before us.
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
  if (prefetch_) prefetch_->stop();  // the capture thread; nothing drains its queue any more
}

EngineStats Engine::stats() const {
  EngineStats s;
#define PD3_LOAD_FIELD(name) s.name = counters_.name.load(std::memory_order_relaxed);  // relaxed: see Counters
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

std::vector<ServerState> Engine::servers() const { return links_.snapshot(); }

int Engine::set_member(const Endpoint& endpoint, bool member) {
  if (endpoint.host.empty() || endpoint.port == 0)
    return fail(PD3_E_INVAL, "pool member '%s' is not host:port", endpoint.str().c_str());
  std::lock_guard lock(members_mu_);
  member_commands_.push_back(MemberCommand{endpoint, member});
  // relaxed: the flag only tells the engine thread to look. The command itself is published by
  // members_mu_, which the engine thread takes before reading the queue; a flag seen late only
  // delays the command by a pass of the loop (a millisecond at most: the heartbeat).
  members_waiting_.store(true, std::memory_order_relaxed);
  return PD3_OK;
}

// ---- the loop ------------------------------------------------------------------------------

void Engine::run() {
  uint64_t last_work = now_ns();
  uint64_t last_beat = 0;
  uint64_t last_gauges = 0;
  uint64_t acked = UINT64_MAX;  // the fence last acknowledged (none yet)
  // relaxed: see stop().
  while (!stop_.load(std::memory_order_relaxed)) {
    // Every response published after this load checks the fence itself, and every one published
    // before it is ordered before the acknowledgement's release store below.
    const uint64_t fence = session_->request_fence();
    fence_ = fence;
    const uint64_t now = now_ns();
    if (now - last_beat >= kBeatEveryNs) {
      session_->beat();
      last_beat = now;
    }
    // relaxed: a hint, the queue is read under members_mu_ (see set_member).
    if (members_waiting_.load(std::memory_order_relaxed)) apply_members();
    bool worked = service_sockets(now);
    worked |= service_timers(now);
    // Requests wait in the ring until every server was tried once: an ALLOCATE taken while the
    // first connections are still being made would find no server up and fail for nothing.
    // relaxed: only this thread stores it.
    if (first_round_done_.load(std::memory_order_relaxed)) worked |= take_requests(now);
    if (prefetch_) {
      if (via_host_) expire_hints(now);
      worked |= prefetch_->poll(now);
    }
    worked |= dispatch(now);
    worked |= publish();
    // Stored only when it changed: the host reads this cache line on every request it issues.
    // An unchanged fence was acknowledged already, and every response published since checked it.
    if (fence != acked) {
      session_->ack_fence(fence);
      acked = fence;
    }
    if (worked || now - last_gauges >= kGaugesEveryNs) {
      update_gauges(now);
      last_gauges = now;
    }
    if (worked) {
      last_work = now;
      idle_rounds_ = 0;
    } else if (now - last_work >= uint64_t(options_.idle_spin_us) * kUs) {
      idle_wait(now, last_beat);
    }
  }
  shutdown();
}

bool Engine::service_sockets(uint64_t now) {
  epoll_event events[kMaxEvents];
  const int n = epoll_wait(epoll_.get(), events, kMaxEvents, 0);
  for (int e = 0; e < n; ++e) {
    const int li = int(events[e].data.u32);
    ServerLink& link = links_[li];
    const bool was_up = link.up();
    received_.clear();
    const int rc = link.on_events(events[e].events, &received_);
    const std::string why = rc != PD3_OK ? pd3_last_error() : std::string();
    bool failed = false;
    for (ReceivedFrame& f : received_) {
      if (!failed && check_frame(link, f) != PD3_OK) {
        const std::string violation = pd3_last_error();
        fail_records(f.records, PD3_E_UNAVAILABLE);
        buffer_->release(f.space.ticket);
        fail_link(li, PD3_E_PROTOCOL, violation, now);
        failed = true;
      } else if (failed) {  // arrived after a violation on a link now closed: not trusted either
        fail_records(f.records, PD3_E_UNAVAILABLE);
        buffer_->release(f.space.ticket);
      } else {
        deliver(li, f, now);
      }
    }
    if (failed) continue;
    if (rc != PD3_OK) {
      fail_link(li, rc, why, now);
    } else if (!was_up && link.up()) {
      on_link_up(li);
    }
  }
  // Table 2: the read keys enter Host View before their responses reach the host (publish()).
  run_host_view(HostViewOp::kInsert, &insert_hashes_);
  return n > 0;
}

bool Engine::service_timers(uint64_t now) {
  bool worked = false;
  bool connecting = false;
  for (size_t li = 0; li < links_.size(); ++li) {
    ServerLink& link = links_[li];
    const LinkState before = link.state();
    const int rc = link.state() == LinkState::kDown ? link.connect_if_due(now) : link.check_deadlines(now);
    if (rc != PD3_OK) {
      fail_link(int(li), rc, pd3_last_error(), now);
      worked = true;
    } else if (link.state() != before) {
      worked = true;
    }
    connecting |= link.state() == LinkState::kConnecting || link.state() == LinkState::kHello;
  }
  // relaxed load: only this thread stores it.
  if (!connecting && !first_round_done_.load(std::memory_order_relaxed)) {
    update_gauges(now);  // so that stats() after start() already count the servers reached
    // release: pairs with launch()'s acquire wait.
    first_round_done_.store(true, std::memory_order_release);
    first_round_done_.notify_all();
  }
  return worked;
}

bool Engine::take_requests(uint64_t now) {
  // Back-pressure: while a server's unsent requests pile up (it is slow, or the response buffer
  // is full), requests stay in the ring, where the host sees PD3_E_AGAIN once it fills.
  for (const auto& e : links_)
    if (e.link->backlogged()) return false;
  // relaxed: this thread is the counter's only writer.
  const uint64_t fenced_before = session_->counters().fenced;
  const int n = session_->requests().drain(options_.max_batch_records, fence_, [&](const RequestView& v) { route(v, now); });
  bump(counters_.fenced, session_->counters().fenced - fenced_before);  // discarded unexecuted
  if (n == PD3_E_CORRUPT && !ring_broken_logged_) {
    log_.log(LogLevel::kError, "ring.corrupt", "the request ring's framing is broken; the host must recreate the segment");
    ring_broken_logged_ = true;
  }
  // Table 2: the written keys leave Host View before the writes are sent (dispatch()).
  run_host_view(HostViewOp::kErase, &erase_hashes_);
  if (n <= 0) return false;
  bump(counters_.batches);
  bump(counters_.records, uint64_t(n));
  return true;
}

bool Engine::dispatch(uint64_t now) {
  bool worked = false;
  for (size_t li = 0; li < links_.size(); ++li) {
    ServerLink& link = links_[li];
    if (!link.up()) continue;
    const uint64_t before = link.frames_sent();
    if (const int rc = link.dispatch(now, *buffer_)) {
      fail_link(int(li), rc, pd3_last_error(), now);
      worked = true;
    }
    worked |= link.frames_sent() != before;
  }
  return worked;
}

bool Engine::publish() {
  if (replies_.empty()) return false;
  const PublishCounts c = replies_.publish(session_->responses(), fence_, *buffer_);
  bump(counters_.responses, c.published);
  bump(counters_.errors, c.errors);
  bump(counters_.fenced, c.fenced);
  return c.published + c.fenced > 0;
}

void Engine::idle_wait(uint64_t now, uint64_t last_beat) {
  // Short sleeps right after work (the next request is likely close), longer ones as the idle
  // stretch grows: an idle agent on a shared host costs ~2% of a core instead of ~30%.
  const uint64_t sleep_us = std::min<uint64_t>(uint64_t(options_.idle_sleep_us) << std::min(idle_rounds_, 16u),
                                               options_.idle_sleep_max_us);
  ++idle_rounds_;
  uint64_t due = std::min(now + sleep_us * kUs, last_beat + kBeatAtLeastNs);
  for (const auto& e : links_) due = std::min(due, e.link->next_deadline(now));
  if (due <= now) return;
  const uint64_t ns = due - now;
  const timespec ts{time_t(ns / 1000000000ull), long(ns % 1000000000ull)};
  // With responses due (or a connection being made), wait on the sockets, which our own threads'
  // doorbell (eventfd) can also wake; host requests are then picked up after this (short) sleep.
  // With nothing due, sleep on the futex doorbell in the control block, which host threads ring
  // when they publish a request (ring_agent), as do our capture and Host View threads.
  bool sockets = false;
  for (const auto& e : links_)
    sockets |= e.link->inflight_records() > 0 || e.link->state() == LinkState::kConnecting || e.link->state() == LinkState::kHello;
  const uint32_t armed = doorbell_.arm(sockets ? PD3_AGENT_POLLING : PD3_AGENT_SLEEPING);
  if (work_waiting()) return doorbell_.disarm(false);  // arrived since our last look
  if (!sockets) {
    (void)doorbell_.sleep(armed, &ts);  // rung or timed out: either way, look at everything again
    return doorbell_.disarm(false);
  }
  pollfd p[2] = {{epoll_.get(), POLLIN, 0}, {doorbell_.fd(), POLLIN, 0}};
  ppoll(p, 2, &ts, nullptr);
  doorbell_.disarm((p[1].revents & POLLIN) != 0);
}

bool Engine::work_waiting() const {
  if (session_->requests().published_at_head()) return true;
  return prefetch_ && prefetch_->has_work();
}

void Engine::shutdown() {
  const uint64_t fence = session_->request_fence();
  fence_ = fence;
  const uint64_t now = now_ns();
  for (size_t li = 0; li < links_.size(); ++li) {
    orphans_.clear();
    links_[li].close(now, *buffer_, &orphans_);
    fail_records(orphans_, PD3_E_UNAVAILABLE);
    refresh_server(int(li));
  }
  links_.forget_all_servers();
  publish();
  if (!replies_.empty())
    log_.log(LogLevel::kWarn, "engine.undelivered", "%zu responses not delivered at stop: the response ring is full",
             replies_.size());
  replies_.clear(*buffer_);
  session_->ack_fence(fence);
  update_gauges(now);
  log_.log(LogLevel::kInfo, "engine.stopped", "transfer engine stopped");
}

// ---- routing -------------------------------------------------------------------------------

void Engine::route(const RequestView& v, uint64_t now) {
  const uint16_t op_id = v.hdr.op_id;
  if (!v.has_header) return;  // counted in agent_corrupt; no id to answer
  if (v.status != PD3_OK) return reply(v.pos, op_id, v.status);
  if (v.hdr.reserved != 0) {
    // Refused rather than ignored, so that a later meaning of the field is never silently dropped.
    // A returned hint (PREFETCH) expects no reply: it is refused like any hint that does not match.
    if (pd3_op_of(op_id) == PD3_OP_PREFETCH) return bump(counters_.prefetch_hints_refused);
    return reply(v.pos, op_id, PD3_E_PROTOCOL);
  }
  const uint8_t* record = v.payload - sizeof(pd3_request);
  const LinkRecord meta{v.hdr, v.pos, 0, 0};
  int status = PD3_OK;
  switch (pd3_op_of(op_id)) {
    case PD3_OP_WRITE:
    case PD3_OP_READ: {
      const int li = link_for_region(v.hdr.region, &status);
      if (li < 0) return fail_request(v.pos, op_id, status);
      forward(li, record, v.record_len, meta, now);
      if (pd3_op_of(op_id) == PD3_OP_READ) return;
      // Table 2, after the DMA read ①: the written keys leave Host View and their Loading Zone
      // items are withdrawn, before the write is sent (dispatch() comes later in this pass). The
      // prefetcher, when there is one, owns Host View and learns where the keys now live (it
      // names a server by its link index: see servers_up()).
      for_each_key(v.payload, v.hdr.size, [&](const uint8_t* key, uint32_t len) {
        bump(counters_.lz_invalidations, session_->zone().invalidate(key, len));
        if (prefetch_) {
          prefetch_->prefetcher().on_host_flush(key, len, li);
        } else if (host_view_) {
          erase_hashes_.push_back(host_view_key_hash(key, len));
        }
      });
      return;
    }
    case PD3_OP_CONTROL:
      switch (v.hdr.region) {
        case PD3_CTL_ALLOCATE: {
          const int li = pick_allocate_link(v.hdr.size, 0, false);
          if (li < 0) return fail_request(v.pos, op_id, PD3_E_UNAVAILABLE);
          return send_allocate(li, meta, now);
        }
        case PD3_CTL_DEALLOCATE: {
          const int li = link_for_region(v.hdr.offset, &status);
          if (li < 0) return fail_request(v.pos, op_id, status);
          return forward(li, record, v.record_len, meta, now);
        }
        case PD3_CTL_STATS: {
          HostReply r;
          r.pos = v.pos;
          r.op_id = op_id;
          r.text = stats_text();
          r.size = uint32_t(r.text.size());
          replies_.push(std::move(r));
          return;
        }
        default:
          return reply(v.pos, op_id, PD3_E_BAD_OP);
      }
    default:  // PD3_OP_PREFETCH: the host sends back a hint (issuer "host"); it expects no reply
      return take_hinted_prefetch(v, now);
  }
}

int Engine::link_for_region(uint32_t region, int* status) const {
  const int li = links_.of_server(pd3_region_server(region));
  if (li >= 0) return li;
  // No connected server has that id: if every server is connected the region cannot exist,
  // otherwise it may belong to one that is down.
  *status = links_.all_up() ? PD3_E_BAD_REGION : PD3_E_UNAVAILABLE;
  return -1;
}

int Engine::pick_allocate_link(uint32_t size, uint64_t tried, bool retry) {
  candidates_.resize(links_.size());
  for (size_t li = 0; li < links_.size(); ++li) candidates_[li] = {links_[li].up(), links_[li].free_bytes()};
  // A retry only goes where it may fit; a first try goes anywhere up (the estimate may be stale).
  const int li = placement_.pick(candidates_, tried, retry ? size : 0, now_ns());
  set(counters_.placement_refraction_skips, placement_.refraction_skips());  // placement_ counts them
  return li;
}

void Engine::send_allocate(int li, const LinkRecord& meta, uint64_t now) {
  uint64_t& free = links_[li].free_bytes();
  free -= std::min<uint64_t>(free, meta.hdr.size);  // taken now so concurrent allocations spread
  refresh_server(li);
  forward(li, reinterpret_cast<const uint8_t*>(&meta.hdr), sizeof meta.hdr, meta, now);
}

void Engine::forward(int li, const uint8_t* record, uint32_t record_len, LinkRecord meta, uint64_t now) {
  TransportRequest t;
  t.op_id = meta.hdr.op_id;
  t.region = meta.hdr.region;
  t.offset = meta.hdr.offset;
  t.size = meta.hdr.size;
  t.data_len = pd3_request_payload_len(&meta.hdr);
  meta.space = response_space(t);
  if (!links_[li].fits(record_len, meta.space)) return reply(meta.pos, meta.hdr.op_id, PD3_E_TOO_BIG);
  links_[li].add(record, record_len, meta, now);
}

// ---- responses -----------------------------------------------------------------------------

int Engine::check_frame(const ServerLink& link, const ReceivedFrame& f) const {
  uint64_t at = 0;
  for (size_t i = 0; i < f.records.size(); ++i) {
    TransportResponse r;
    decode_response(f.body + at, f.body_len - at, &r);  // cannot fail: the link validated the frame
    at += r.record_len;
    const LinkRecord& q = f.records[i];
    // Named only when something is wrong: building the string per record costs more than the check.
    const auto name = [&] { return link.endpoint().str(); };
    if (r.op_id != q.hdr.op_id)
      return fail(PD3_E_PROTOCOL, "%s: response %zu is for op/id %#x, the request was %#x", name().c_str(), i,
                  unsigned(r.op_id), unsigned(q.hdr.op_id));
    if (r.record_len > q.space)
      return fail(PD3_E_PROTOCOL, "%s: response %zu takes %u bytes, %llu were reserved", name().c_str(), i, r.record_len,
                  (unsigned long long)q.space);
    if (r.status == 0 && pd3_op_of(q.hdr.op_id) == PD3_OP_CONTROL && q.hdr.region == PD3_CTL_ALLOCATE) {
      pd3_alloc_reply a{};
      if (r.data_len != sizeof a) return fail(PD3_E_PROTOCOL, "%s: allocate reply of %u bytes", name().c_str(), r.data_len);
      std::memcpy(&a, r.data, sizeof a);
      if (int(pd3_region_server(a.region)) != link.server_id())
        return fail(PD3_E_PROTOCOL, "%s (server %d) allocated region %#x of another server", name().c_str(), link.server_id(),
                    unsigned(a.region));
    }
  }
  return PD3_OK;
}

void Engine::deliver(int li, ReceivedFrame& f, uint64_t now) {
  uint64_t at = 0;
  bool replied = false;
  for (const LinkRecord& q : f.records) {
    TransportResponse r;
    decode_response(f.body + at, f.body_len - at, &r);  // checked by check_frame
    at += r.record_len;
    const int status = -int(r.status);
    const uint32_t op = pd3_op_of(q.hdr.op_id);
    if (op == PD3_OP_CONTROL && q.hdr.region == PD3_CTL_ALLOCATE) {
      if (after_allocate(li, q, status, r, now)) continue;  // retried on another server
    } else if (op == PD3_OP_CONTROL && q.hdr.region == PD3_CTL_DEALLOCATE && status == PD3_OK) {
      if (auto it = region_bytes_.find(q.hdr.offset); it != region_bytes_.end()) {
        uint64_t& free = links_[li].free_bytes();
        free = std::min(free + it->second, links_[li].capacity());
        region_bytes_.erase(it);
        refresh_server(li);
      }
    } else if (op == PD3_OP_PREFETCH) {
      // The prefetcher's own request: its answer goes to the Loading Zone, not to the host.
      if (prefetch_)
        prefetch_->prefetcher().on_response(q.hdr.op_id, li, status, r.key, r.key_len, r.data, r.data_len, now);
      continue;
    } else if (op == PD3_OP_READ && status == PD3_OK && (prefetch_ || host_view_)) {
      for_each_key(r.data, r.data_len, [&](const uint8_t* key, uint32_t len) {
        if (prefetch_) {
          prefetch_->prefetcher().on_host_read(key, len);
        } else {
          insert_hashes_.push_back(host_view_key_hash(key, len));
        }
      });
    }
    reply(q.pos, q.hdr.op_id, status, r.size, r.data_len ? r.data : nullptr);
    replied = true;
  }
  // The frame's space is freed with its last reply (replies leave the backlog in order).
  if (replied) {
    replies_.back().release = f.space.ticket;
  } else {
    buffer_->release(f.space.ticket);
  }
}

bool Engine::after_allocate(int li, const LinkRecord& req, int status, const TransportResponse& r, uint64_t now) {
  ServerLink& link = links_[li];
  uint64_t& free = link.free_bytes();
  free = std::min(free + req.hdr.size, link.capacity());  // undo the estimate send_allocate took
  if (status == PD3_OK) {
    pd3_alloc_reply a;
    std::memcpy(&a, r.data, sizeof a);
    free -= std::min<uint64_t>(free, a.capacity);
    region_bytes_[a.region] = a.capacity;
    refresh_server(li);
    return false;
  }
  if (status != PD3_E_NOSPACE) {
    refresh_server(li);
    return false;
  }
  // This server cannot hold that much: remember it, rest it for the refraction period, and try
  // the next one that may have room.
  bump(counters_.allocations_refused);
  placement_.refused(size_t(li), now);
  free = std::min<uint64_t>(free, req.hdr.size > 0 ? req.hdr.size - 1 : 0);
  refresh_server(li);
  LinkRecord retry = req;
  retry.tried |= uint64_t{1} << li;
  const int next = pick_allocate_link(req.hdr.size, retry.tried, true);
  if (next < 0) return false;
  send_allocate(next, retry, now);
  return true;
}

void Engine::reply(uint64_t pos, uint16_t op_id, int status, uint32_t size, const uint8_t* data) {
  HostReply r;
  r.pos = pos;
  r.op_id = op_id;
  r.status = status;
  r.size = size;
  r.data = data;
  replies_.push(std::move(r));
}

void Engine::fail_request(uint64_t pos, uint16_t op_id, int status) {
  if (status == PD3_E_UNAVAILABLE || status == PD3_E_TIMEOUT) bump(counters_.unavailable);
  reply(pos, op_id, status);
}

void Engine::fail_records(const std::vector<LinkRecord>& records, int status) {
  for (const LinkRecord& r : records)
    if (pd3_op_of(r.hdr.op_id) != PD3_OP_PREFETCH) fail_request(r.pos, r.hdr.op_id, status);  // no host waits for those
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

// ---- links ---------------------------------------------------------------------------------

void Engine::apply_members() {
  std::vector<MemberCommand> commands;
  {
    std::lock_guard lock(members_mu_);
    commands.swap(member_commands_);
    // relaxed: stored under members_mu_ like every store of it, so a command queued after this
    // critical section sets it again after this store.
    members_waiting_.store(false, std::memory_order_relaxed);
  }
  for (const MemberCommand& c : commands) {
    const int li = links_.of_endpoint(c.endpoint);
    if (li >= 0) {
      // Known: placeable or not from now on. Its connection is left alone either way: a server
      // that left may still hold regions, which are served while it answers.
      placement_.set_live(size_t(li), c.member);
      refresh_server(li);
    } else if (c.member) {
      add_link(c.endpoint);  // connected by service_timers, placed once its hello succeeds
    }
  }
}

void Engine::add_link(const Endpoint& endpoint) {
  size_t li = links_.size();
  if (li >= kMaxLinks) {
    // No room for another link: take the place of a server that left the pool and is not up (a
    // link that is not up holds no request). Its regions were unreachable anyway.
    for (li = 0; li < links_.size(); ++li)
      if (!placement_.live(li) && !links_[li].up()) break;
    if (li == links_.size()) {
      log_.log(LogLevel::kError, "pool.member_refused",
               "%s joined the pool, but this agent serves %zu memory servers at most and none of them left",
               endpoint.str().c_str(), kMaxLinks);
      return;
    }
    ServerLink& old = links_[li];
    log_.log(LogLevel::kInfo, "pool.link_reused", "%s takes the link of %s (server %d), which left the pool",
             endpoint.str().c_str(), old.endpoint().str().c_str(), old.server_id());
    orphans_.clear();
    old.close(now_ns(), *buffer_, &orphans_);  // a connect or hello under way: its socket leaves epoll
    fail_records(orphans_, PD3_E_UNAVAILABLE);  // none: records go only to links that are up
    links_.forget_server(int(li));
  }
  links_.install(li, std::make_unique<ServerLink>(endpoint, uint32_t(li), epoll_.get(), link_options_), /*joined=*/true);
  placement_.reset(li);
}

void Engine::fail_link(int li, int status, const std::string& why, uint64_t now) {
  ServerLink& link = links_[li];
  const bool was_up = link.up();
  orphans_.clear();
  link.close(now, *buffer_, &orphans_);
  // The timeout case tells the host its server stopped answering; anything else, that it is gone.
  fail_records(orphans_, status == PD3_E_TIMEOUT && was_up ? PD3_E_TIMEOUT : PD3_E_UNAVAILABLE);
  links_.forget_server(li);
  if (prefetch_ && link.server_id() >= 0) prefetch_->prefetcher().on_server_lost(li);
  if (was_up) {
    log_.log(LogLevel::kWarn, "server.lost", "%s (server %d) dropped: %s; %zu requests failed",
             link.endpoint().str().c_str(), link.server_id(), why.c_str(), orphans_.size());
  } else if (why != links_.memory(li).logged) {  // a server that stays down is logged once per reason
    const bool refused = status == PD3_E_AUTH || status == PD3_E_BAD_VERSION || status == PD3_E_PROTOCOL;
    log_.log(refused ? LogLevel::kError : LogLevel::kWarn, status == PD3_E_AUTH ? "server.auth" : "server.unreachable",
             "%s: %s (retrying every %u ms)", link.endpoint().str().c_str(), why.c_str(), options_.reconnect_ms);
  }
  links_.memory(li).logged = why;
  links_.set_last_error(li, why);
  refresh_server(li);
}

void Engine::on_link_up(int li) {
  ServerLink& link = links_[li];
  LinkTable::Memory& memory = links_.memory(li);
  const int id = link.server_id();
  if (const int holder = links_.of_server(uint32_t(id)); holder >= 0 && holder != li) {
    const std::string why = "server id " + std::to_string(id) + " is already served by " +
                            links_[holder].endpoint().str();
    log_.log(LogLevel::kError, "server.duplicate_id", "%s: %s", link.endpoint().str().c_str(), why.c_str());
    memory.logged = why;  // fail_link below must not log it a second time
    fail_link(li, PD3_E_PROTOCOL, why, now_ns());
    return;
  }
  links_.bind_server(li);
  if (memory.seen_up) {
    bump(counters_.reconnects);
    log_.log(LogLevel::kInfo, "server.reconnected", "%s (server %d) is back", link.endpoint().str().c_str(), id);
  } else if (memory.joined) {
    log_.log(LogLevel::kInfo, "pool.member_joined", "%s (server %d) joined the pool: %llu of %llu bytes free; new regions may go there",
             link.endpoint().str().c_str(), id, (unsigned long long)link.free_bytes(),
             (unsigned long long)link.capacity());
  } else {
    log_.log(LogLevel::kInfo, "server.connected", "%s (server %d): %llu of %llu bytes free",
             link.endpoint().str().c_str(), id, (unsigned long long)link.free_bytes(),
             (unsigned long long)link.capacity());
  }
  memory.seen_up = true;
  memory.logged.clear();
  refresh_server(li);
}

// ---- Host View and gauges ------------------------------------------------------------------

void Engine::run_host_view(HostViewOp op, std::vector<uint64_t>* hashes) {
  if (hashes->empty()) return;
  verdicts_.resize(hashes->size());
  host_view_->run(op, hashes->data(), hashes->size(), verdicts_.data());
  uint64_t hits = 0;
  for (const uint8_t v : verdicts_) hits += v;
  bump(op == HostViewOp::kInsert ? counters_.host_view_inserts : counters_.host_view_erases, hits);
  set(counters_.host_view_keys, host_view_->size());
  hashes->clear();
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

int Engine::send_prefetch(int server, uint16_t op_id, const uint8_t* key, uint16_t key_len, uint32_t max_size,
                          uint64_t now) {
  if (via_host_) return send_hint(server, op_id, key, key_len, max_size, now);
  return queue_prefetch(server, op_id, key, key_len, max_size, /*may_defer=*/true, now);
}

// Queues one PREFETCH record for link `li`. may_defer: PD3_E_AGAIN while the link is backlogged
// (the prefetcher retries); otherwise it joins the backlog like any host request.
int Engine::queue_prefetch(int li, uint16_t op_id, const uint8_t* key, uint16_t key_len, uint32_t max_size,
                           bool may_defer, uint64_t now) {
  if (li < 0 || size_t(li) >= links_.size() || !links_[li].up()) return PD3_E_UNAVAILABLE;
  if (may_defer && links_[li].backlogged()) return PD3_E_AGAIN;
  const pd3_prefetch_request h{op_id, key_len, max_size};
  prefetch_record_.resize(sizeof h + key_len);
  std::memcpy(prefetch_record_.data(), &h, sizeof h);
  std::memcpy(prefetch_record_.data() + sizeof h, key, key_len);
  TransportRequest t;
  decode_request(prefetch_record_.data(), prefetch_record_.size(), &t);
  // No ring position: no host waits for this record (fail_records skips PREFETCH records).
  const LinkRecord meta{pd3_make_request(op_id, 0, 0, max_size), kNoRingPosition, response_space(t), 0};
  if (!links_[li].fits(uint32_t(prefetch_record_.size()), meta.space)) return PD3_E_UNAVAILABLE;
  links_[li].add(prefetch_record_.data(), uint32_t(prefetch_record_.size()), meta, now);
  return PD3_OK;
}

// The hint names the server by its id (what the host sends back); the prefetcher by link `li`.
int Engine::send_hint(int li, uint16_t op_id, const uint8_t* key, uint16_t key_len, uint32_t max_size, uint64_t now) {
  if (li < 0 || size_t(li) >= links_.size() || !links_[li].up()) return PD3_E_UNAVAILABLE;
  // A host that does not poll leaves hints (and its responses) queued here: stop adding.
  if (replies_.size() >= kMaxReplyBacklogForHints) return PD3_E_AGAIN;
  const uint16_t server_id = uint16_t(links_[li].server_id());  // up: a server id from its hello
  const pd3_prefetch_hint h{server_id, key_len, max_size};
  HostReply r;
  r.pos = kNoRingPosition;  // answers no request: never below a fence
  r.op_id = op_id;
  r.status = PD3_OK;
  r.text.reserve(sizeof h + key_len);
  r.text.append(reinterpret_cast<const char*>(&h), sizeof h);
  r.text.append(reinterpret_cast<const char*>(key), key_len);
  r.size = uint32_t(r.text.size());
  replies_.push(std::move(r));
  hints_.add(pd3_id_of(op_id), server_id, host_view_key_hash(key, key_len),
             now + uint64_t(options_.prefetch.hint_timeout_ms) * kMs);
  bump(counters_.prefetch_hints);
  return PD3_OK;
}

void Engine::take_hinted_prefetch(const RequestView& v, uint64_t now) {
  // Never a reply: the host used the agent's prefetch id, not one of its own request ids.
  const uint32_t server_id = v.hdr.region;
  const uint32_t key_len = v.hdr.size;
  if (!via_host_ || key_len == 0 || key_len > PD3_MAX_KEY_LEN || server_id > UINT16_MAX ||
      !hints_.take(pd3_id_of(v.hdr.op_id), uint16_t(server_id), host_view_key_hash(v.payload, key_len)))
    return bump(counters_.prefetch_hints_refused);
  bump(counters_.prefetch_hints_returned);
  // A server gone since the hint: the prefetcher already finished its prefetches (on_server_lost).
  const int li = links_.of_server(server_id);
  const int rc = queue_prefetch(li, v.hdr.op_id, v.payload, uint16_t(key_len), v.hdr.offset, /*may_defer=*/false, now);
  if (rc != PD3_OK && li >= 0) prefetch_->prefetcher().on_response(v.hdr.op_id, li, rc, nullptr, 0, nullptr, 0, now);
}

void Engine::expire_hints(uint64_t now) {
  hints_.expire(now, [&](uint32_t id, uint16_t server_id) {
    bump(counters_.prefetch_hints_expired);
    // A server gone since the hint: the prefetcher already finished its prefetches (on_server_lost).
    if (const int li = links_.of_server(server_id); li >= 0)
      prefetch_->prefetcher().on_response(pd3_op_id(PD3_OP_PREFETCH, id), li, PD3_E_TIMEOUT, nullptr, 0, nullptr, 0,
                                          now);
  });
}

// The prefetcher names servers by link index, not by server id: ids reach 65,535, while its masks
// (this one) and its key directory hold 32 and 31 servers. Links past those are never prefetched from.
uint32_t Engine::servers_up() const {
  uint32_t mask = 0;
  for (size_t li = 0; li < links_.size() && li < 32; ++li)
    if (links_[li].up() && links_.of_server(uint32_t(links_[li].server_id())) == int(li)) mask |= uint32_t{1} << li;
  return mask;
}

}  // namespace

int TransferEngine::start(const EngineOptions& options, std::unique_ptr<TransferEngine>* out) {
  clear_error();
  if (out == nullptr) return fail(PD3_E_INVAL, "out is required");
  if (const int rc = validate_engine_options(options)) return rc;
  auto engine = std::make_unique<Engine>(options);
  if (const int rc = engine->init()) return rc;
  engine->launch();
  *out = std::move(engine);
  return PD3_OK;
}

}  // namespace pd3
