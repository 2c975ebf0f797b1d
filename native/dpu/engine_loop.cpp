// engine_loop.cpp — the Transfer Engine's loop (Engine, engine.hpp): each pass beats, applies
// membership changes, services sockets and timers, takes requests, runs the prefetch path, sends
// and publishes, then sleeps once the idle stretch is long enough; and the Host View step
// (Table 2) a pass runs on the keys it saw. The per-request steps are engine_route.cpp
// (take_requests) and engine_deliver.cpp (service_sockets).
#include <poll.h>

#include <algorithm>
#include <ctime>

#include "dpu/engine.hpp"

namespace pd3 {

namespace {

constexpr uint64_t kBeatEveryNs = 100 * kUs;  // beat this often while busy
constexpr uint64_t kBeatAtLeastNs = 900 * kUs;  // and never sleep past this (a beat per ms at worst)

}  // namespace

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
    // A hint, relaxed (MemberInbox::waiting): the queue itself is read under the inbox's lock.
    if (members_.waiting()) apply_members();
    bool worked = service_sockets(now);
    worked |= service_timers(now);
    // Requests wait in the ring until every server was tried once: an ALLOCATE taken while the
    // first connections are still being made would find no server up and fail for nothing.
    // relaxed: only this thread stores it.
    if (first_round_done_.load(std::memory_order_relaxed)) worked |= take_requests(now);
    if (prefetch_) {
      if (hints_.enabled()) hints_.expire_hints(now);
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

// ---- Host View (Table 2) -------------------------------------------------------------------

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

}  // namespace pd3
