// transfer_engine.cpp — the Transfer Engine's thread: takes host requests from the request ring,
// routes them to memory-server links, receives responses into the unified response buffer, keeps
// Host View and the Loading Zone right (Table 2) and publishes responses to the host. This file:
// starting and stopping it (TransferEngine::start, Engine's init, launch, stop); engine.hpp says
// where the rest of Engine is.
#include "dpu/transfer_engine.hpp"

#include <sys/prctl.h>
#include <sys/epoll.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>

#include "common/error.hpp"
#include "dpu/engine.hpp"
#include "pd3/status.h"

namespace pd3 {

namespace {

constexpr uint64_t kDefaultHostViewKeys = 1u << 20;

}  // namespace

Engine::Engine(const EngineOptions& options)
    : options_(options),
      placement_(options.placement, uint64_t(options.refraction_ms) * 1'000'000, now_ns()),
      // Prefetches go to the host as hints first (PrefetchSetup::issuer "host").
      hints_(!options.prefetch.parser.empty() && options.prefetch.issuer == "host",
             uint64_t(options.prefetch.hint_timeout_ms) * kMs, *this, replies_, counters_) {}

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
