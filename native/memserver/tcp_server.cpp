// tcp_server.cpp — see tcp_server.hpp.
#include "memserver/tcp_server.hpp"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <system_error>

#include "common/error.hpp"
#include "pd3/status.h"

namespace pd3 {

namespace {

// Smallest max_frame accepted: room for a hello with the longest token, with margin.
constexpr uint32_t kMinFrame = 4096;
// Ready sockets taken per epoll_wait.
constexpr int kEventsPerWait = 64;
// After accept() runs out of descriptors, how long the listening socket is left alone.
constexpr uint64_t kAcceptRetryNs = 100'000'000;
// Least time between two store.record_parser_rejected lines: a broken plug-in refused on every
// write must not flood the log (the metric counts every refusal).
constexpr uint64_t kRejectsLogIntervalNs = 10'000'000'000;

// "a.b.c.d:port" of an IPv4 socket address.
std::string peer_name(const sockaddr_in& addr) {
  char ip[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(addr.sin_port));
}

// Milliseconds from now until `deadline_ns`, rounded up, at least 0.
int ms_until(uint64_t deadline_ns, uint64_t now) {
  if (deadline_ns <= now) return 0;
  return int(std::min<uint64_t>((deadline_ns - now + 999'999) / 1'000'000, 60'000));
}

// Errors accept() reports for a connection that died while queued: the next one may be fine.
bool accept_error_is_transient(int e) {
  switch (e) {
    case EINTR: case ECONNABORTED: case EPROTO: case ENETDOWN: case ENOPROTOOPT: case EHOSTDOWN:
    case ENONET: case EHOSTUNREACH: case EOPNOTSUPP: case ENETUNREACH: case EPERM:
      return true;
    default:
      return false;
  }
}

}  // namespace

int TcpServer::start(const TcpServerOptions& options, std::unique_ptr<MemStore> store,
                     std::unique_ptr<TcpServer>* out) {
  clear_error();
  if (!store) return fail(PD3_E_INVAL, "TcpServer needs a MemStore");
  if (options.token.size() > PD3_TOKEN_MAX)
    return fail(PD3_E_INVAL, "auth token of %zu bytes, at most %u", options.token.size(), PD3_TOKEN_MAX);
  if (options.max_frame < kMinFrame || options.max_frame > PD3_FRAME_MAX_LIMIT)
    return fail(PD3_E_INVAL, "max_frame %u outside [%u, %u]", options.max_frame, kMinFrame, PD3_FRAME_MAX_LIMIT);
  if (options.max_connections == 0) return fail(PD3_E_INVAL, "max_connections must be at least 1");
  if (options.max_output_bytes == 0) return fail(PD3_E_INVAL, "max_output_bytes must be at least 1");
  if (options.hello_timeout_ms == 0) return fail(PD3_E_INVAL, "hello_timeout_ms must be at least 1");
  if (options.warm_ahead > kMaxWarmAhead)
    return fail(PD3_E_INVAL, "warm_ahead %u exceeds %u", options.warm_ahead, kMaxWarmAhead);
  std::unique_ptr<TcpServer> server(new TcpServer(options, std::move(store)));
  if (const int rc = server->listen_and_spawn()) return rc;
  *out = std::move(server);
  return PD3_OK;
}

TcpServer::TcpServer(const TcpServerOptions& options, std::unique_ptr<MemStore> store)
    : options_(options),
      store_(std::move(store)),
      context_{options_, *store_, live_, live_histogram_, log_} {}

TcpServer::~TcpServer() { stop(); }

int TcpServer::listen_and_spawn() {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(options_.port);
  if (const int rc = getaddrinfo(options_.host.c_str(), port.c_str(), &hints, &res); rc != 0 || res == nullptr)
    return fail(PD3_E_INVAL, "cannot resolve listen address %s: %s", options_.host.c_str(), gai_strerror(rc));
  sockaddr_in addr{};
  std::memcpy(&addr, res->ai_addr, sizeof addr);
  freeaddrinfo(res);

  listen_fd_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (listen_fd_.get() < 0) return fail(PD3_E_SYS, "socket: %s", strerror(errno));
  const int one = 1;
  setsockopt(listen_fd_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const std::string where = options_.host + ":" + port;
  if (::bind(listen_fd_.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    return fail(PD3_E_SYS, "bind %s: %s", where.c_str(), strerror(errno));
  if (::listen(listen_fd_.get(), SOMAXCONN) != 0) return fail(PD3_E_SYS, "listen %s: %s", where.c_str(), strerror(errno));
  socklen_t len = sizeof addr;
  if (getsockname(listen_fd_.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return fail(PD3_E_SYS, "getsockname: %s", strerror(errno));
  port_ = ntohs(addr.sin_port);

  epoll_fd_ = UniqueFd(epoll_create1(EPOLL_CLOEXEC));
  if (epoll_fd_.get() < 0) return fail(PD3_E_SYS, "epoll_create1: %s", strerror(errno));
  wake_fd_ = UniqueFd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (wake_fd_.get() < 0) return fail(PD3_E_SYS, "eventfd: %s", strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenId;
  if (epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, listen_fd_.get(), &ev) != 0)
    return fail(PD3_E_SYS, "epoll_ctl: %s", strerror(errno));
  ev.data.u64 = kWakeId;
  if (epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, wake_fd_.get(), &ev) != 0)
    return fail(PD3_E_SYS, "epoll_ctl: %s", strerror(errno));
  if (const int io_fd = store_->io_fd(); io_fd >= 0) {
    ev.data.u64 = kStoreIoId;
    if (epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, io_fd, &ev) != 0) return fail(PD3_E_SYS, "epoll_ctl: %s", strerror(errno));
  }

  publish();
  log_.log(LogLevel::kInfo, "server.listen", "memory server %u listening on %s:%u", unsigned(store_->server_id()),
           options_.host.c_str(), unsigned(port_));
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error& e) {
    return fail(PD3_E_SYS, "cannot start the server thread: %s", e.what());
  }
  return PD3_OK;
}

void TcpServer::stop() {
  std::lock_guard lock(stop_mu_);
  if (!thread_.joinable()) return;
  // Release: pairs with the loop's acquire load after the wake-up; nothing else is handed over.
  stop_requested_.store(true, std::memory_order_release);
  wake();
  thread_.join();
  listen_fd_.reset();  // refuse new connections at once, rather than queue them unanswered
  store_.reset();      // unmap and close the regions now: a new server may open the same data_dir
}

void TcpServer::run() {
  epoll_event events[kEventsPerWait];
  bool stopping = false;
  while (!stopping) {
    const int n = epoll_wait(epoll_fd_.get(), events, kEventsPerWait, next_timeout_ms());
    if (n < 0) {
      if (errno == EINTR) continue;
      log_.log(LogLevel::kError, "server.loop_failed", "epoll_wait: %s; closing every connection", strerror(errno));
      break;
    }
    for (int i = 0; i < n; ++i) {
      const uint64_t id = events[i].data.u64;
      if (id == kWakeId) {
        uint64_t count = 0;
        while (::read(wake_fd_.get(), &count, sizeof count) < 0 && errno == EINTR) {
        }
        // Acquire: pairs with stop()'s release store (the eventfd read is the wake-up, not the flag).
        stopping = stop_requested_.load(std::memory_order_acquire);
        if (!stopping) run_commands();
      }
      else if (id == kListenId)
        accept_all();
      else if (id == kStoreIoId)
        on_store_io();
      else
        dispatch(id, events[i].events);
    }
    // Records that ran released their pins, and I/O may have completed: parked requests retry.
    if (store_->io_fd() >= 0) {
      resume_parked();
      log_io_errors();
    }
    on_timers();
    publish();
  }
  for (auto& [id, conn] : conns_) conn->close("server stopping");
  conns_.clear();
  log_.log(LogLevel::kInfo, "server.stop", "memory server on port %u stopped", unsigned(port_));
  publish();
}

void TcpServer::on_store_io() {
  if (store_->on_io()) store_runs_ = ~0ull;  // the tier's counters changed
}

void TcpServer::resume_parked() {
  // Until a round moves no parked connection: one that ran records released pins that an earlier
  // one in the same round may have been waiting for, and no event would wake it again.
  for (bool progress = true; progress;) {
    progress = false;
    for (auto it = conns_.begin(); it != conns_.end();) {
      const auto next = std::next(it);
      if (it->second->parked()) {
        try {
          progress |= it->second->resume();
        } catch (const std::bad_alloc&) {
          log_.log(LogLevel::kError, "conn.out_of_memory", "conn %llu: out of memory while serving it",
                   (unsigned long long)it->first);
          it->second->close("out of memory");
          progress = true;
        }
        settle(it);  // may erase it
      }
      it = next;
    }
  }
}

void TcpServer::log_io_errors() {
  for (const std::string& line : store_->take_io_errors())
    log_.log(LogLevel::kError, "tier.io_error", "%s", line.c_str());
  for (const std::string& line : store_->take_tier_notices())
    log_.log(LogLevel::kWarn, "tier.mr_refused", "%s", line.c_str());
}

void TcpServer::accept_all() {
  for (;;) {
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    const int fd = accept4(listen_fd_.get(), reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int e = errno;
      if (e == EAGAIN || e == EWOULDBLOCK) return;
      if (accept_error_is_transient(e)) continue;
      // Out of descriptors or memory: the pending connection stays queued and the listening socket
      // stays readable, so leave it alone for a while instead of spinning on it.
      log_.log(LogLevel::kError, "accept.failed", "accept: %s; not accepting for %llu ms", strerror(e),
               (unsigned long long)(kAcceptRetryNs / 1'000'000));
      set_listening(false);
      return;
    }
    UniqueFd sock(fd);
    const std::string peer = peer_name(addr);
    if (conns_.size() >= options_.max_connections) {
      ++live_.refused_connections;
      log_.log(LogLevel::kWarn, "conn.refused", "%s: %u connections already open (max_connections)", peer.c_str(),
               options_.max_connections);
      continue;  // `sock` closes it
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const uint64_t id = next_id_++;
    const uint64_t deadline = now_ns() + uint64_t(options_.hello_timeout_ms) * 1'000'000;
    auto conn = std::make_unique<Connection>(context_, id, std::move(sock), peer, deadline);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = id;
    if (epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
      log_.log(LogLevel::kError, "accept.failed", "%s: epoll_ctl: %s", peer.c_str(), strerror(errno));
      continue;
    }
    conn->registered = EPOLLIN;
    ++live_.connections_total;
    log_.log(LogLevel::kInfo, "conn.open", "conn %llu from %s", (unsigned long long)id, peer.c_str());
    hello_deadlines_.push_back({deadline, id});
    conns_.emplace(id, std::move(conn));
  }
}

void TcpServer::dispatch(uint64_t id, uint32_t events) {
  const auto it = conns_.find(id);
  if (it == conns_.end()) return;  // closed earlier in this pass
  Connection& conn = *it->second;
  try {
    conn.handle(events);
  } catch (const std::bad_alloc&) {
    log_.log(LogLevel::kError, "conn.out_of_memory", "conn %llu: out of memory while serving it",
             (unsigned long long)id);
    conn.close("out of memory");
  }
  settle(it);
}

void TcpServer::settle(ConnectionMap::iterator it) {
  Connection& conn = *it->second;
  if (!conn.open()) {
    conns_.erase(it);  // its fd is closed, which also removed it from the epoll set
    return;
  }
  const uint32_t want = conn.interest();
  if (want == conn.registered) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.u64 = conn.id();
  if (epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, conn.fd(), &ev) != 0) {
    log_.log(LogLevel::kError, "conn.epoll_failed", "conn %llu: epoll_ctl: %s", (unsigned long long)conn.id(),
             strerror(errno));
    conn.close("epoll_ctl failed");
    conns_.erase(it);
    return;
  }
  conn.registered = want;
}

void TcpServer::on_timers() {
  const uint64_t now = now_ns();
  while (!hello_deadlines_.empty() && hello_deadlines_.front().deadline_ns <= now) {
    const auto it = conns_.find(hello_deadlines_.front().id);
    hello_deadlines_.pop_front();
    if (it == conns_.end()) continue;
    it->second->expire_hello(now);
    settle(it);
  }
  if (!listening_ && now >= accept_retry_ns_) set_listening(true);
  check_pressure(now);
}

void TcpServer::check_pressure(uint64_t now) {
  if (options_.pressure_check_ms == 0 || now < pressure_check_ns_) return;
  pressure_check_ns_ = now + uint64_t(options_.pressure_check_ms) * 1'000'000;
  PressureResult r;
  const int rc = store_->relieve_pressure(&r);
  if (rc != PD3_OK)
    log_.log(LogLevel::kError, "store.give_back_failed", "giving memory back under pressure: %s", pd3_last_error());
  if (r.regions != 0) {
    log_.log(LogLevel::kInfo, "store.gave_back",
             "MemAvailable %llu of %llu bytes, %llu under the headroom: gave %llu bytes of %llu cold regions back "
             "(served from their files from now on)",
             (unsigned long long)r.available_bytes, (unsigned long long)r.total_bytes, (unsigned long long)r.wanted_bytes,
             (unsigned long long)r.released_bytes, (unsigned long long)r.regions);
    store_runs_ = ~0ull;  // publish the store's counters
  }
}

int TcpServer::next_timeout_ms() const {
  const uint64_t now = now_ns();
  int ms = -1;
  if (!hello_deadlines_.empty()) ms = ms_until(hello_deadlines_.front().deadline_ns, now);
  if (!listening_) {
    const int retry = ms_until(accept_retry_ns_, now);
    ms = ms < 0 ? retry : std::min(ms, retry);
  }
  if (options_.pressure_check_ms != 0) {
    const int check = ms_until(pressure_check_ns_, now);
    ms = ms < 0 ? check : std::min(ms, check);
  }
  if (live_.frames + live_.sync_failures != heat_runs_) {  // frames ran since the heat was published
    const int heat = ms_until(heat_ns_ + kHeatPublishNs, now);
    ms = ms < 0 ? heat : std::min(ms, heat);
  }
  return ms;
}

void TcpServer::set_listening(bool on) {
  epoll_event ev{};
  ev.events = on ? uint32_t(EPOLLIN) : 0u;
  ev.data.u64 = kListenId;
  epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, listen_fd_.get(), &ev);
  listening_ = on;
  if (!on) accept_retry_ns_ = now_ns() + kAcceptRetryNs;
}

void TcpServer::reclaim_tenant(const std::string& tenant) {
  {
    std::lock_guard lock(commands_mu_);
    reclaims_.push_back(tenant);
  }
  wake();
}

void TcpServer::wake() {
  const uint64_t one = 1;
  while (::write(wake_fd_.get(), &one, sizeof one) < 0 && errno == EINTR) {
  }
}

void TcpServer::run_commands() {
  std::vector<std::string> reclaims;
  {
    std::lock_guard lock(commands_mu_);
    reclaims.swap(reclaims_);
  }
  for (const std::string& tenant : reclaims) {
    ReclaimResult freed;
    const int rc = store_->reclaim_tenant(tenant, &freed);
    if (rc != PD3_OK)
      log_.log(LogLevel::kError, "tenant.reclaim_failed", "tenant %s: %s (freed %llu regions before it)",
               tenant.c_str(), pd3_last_error(), (unsigned long long)freed.regions);
    else if (freed.regions != 0)
      log_.log(LogLevel::kInfo, "tenant.reclaimed", "tenant %s: freed %llu regions, %llu bytes, %llu index entries",
               tenant.c_str(), (unsigned long long)freed.regions, (unsigned long long)freed.bytes,
               (unsigned long long)freed.index_entries);
  }
  if (!reclaims.empty()) store_runs_ = heat_runs_ = ~0ull;  // refresh the store's counters, tenants and heat at publish()
}

std::vector<RegionHeat> TcpServer::region_heat() const {
  std::lock_guard lock(snapshot_mu_);
  return snapshot_heat_;
}

std::vector<TenantUsage> TcpServer::tenants() const {
  std::lock_guard lock(snapshot_mu_);
  return snapshot_tenants_;
}

void TcpServer::publish() {
  live_.connections = conns_.size();
  // The store changes only when frames run, so its counters are fetched only then.
  const uint64_t runs = live_.frames + live_.sync_failures;
  bool tenants_changed = false;
  std::vector<TenantUsage> tenants;
  bool heat_changed = false;
  std::vector<RegionHeat> heat;
  if (runs != store_runs_) {
    live_.store = store_->stats();
    live_.free_bytes = store_->free_bytes();
    store_runs_ = runs;
    report_record_parser_rejects();
    // Regions change only through CONTROL records or a reclaim.
    const uint64_t controls = live_.store.controls + live_.store.reclaimed_regions;
    if (controls != tenants_controls_) {
      tenants = store_->tenant_usage();
      tenants_controls_ = controls;
      tenants_changed = true;
    }
  }
  // Not after every pass, but never left stale: next_timeout_ms() wakes the loop for the last one.
  if (const uint64_t now = now_ns(); runs != heat_runs_ && now - heat_ns_ >= kHeatPublishNs) {
    heat = store_->region_heat();
    heat_ns_ = now;
    heat_runs_ = runs;
    heat_changed = true;
  }
  std::lock_guard lock(snapshot_mu_);
  if (tenants_changed) snapshot_tenants_.swap(tenants);
  if (heat_changed) snapshot_heat_.swap(heat);
  snapshot_ = live_;
  snapshot_histogram_ = live_histogram_;
}

void TcpServer::report_record_parser_rejects() {
  const uint64_t total = live_.store.record_parser_rejects;
  if (total == rejects_logged_) return;
  const uint64_t now = now_ns();
  if (rejects_logged_ != 0 && now - rejects_log_ns_ < kRejectsLogIntervalNs) return;
  const RecordParser& parser = store_->record_parser();
  const char* last = parser.last_defect();
  log_.log(LogLevel::kWarn, "store.record_parser_rejected",
           "record parser '%s': %llu parse_record answers refused since start (last: %s); the keys of those "
           "answers are neither indexed nor served",
           parser.name().c_str(), (unsigned long long)total, last != nullptr ? last : "unknown");
  rejects_logged_ = total;
  rejects_log_ns_ = now;
}

TcpServerStats TcpServer::stats() const {
  std::lock_guard lock(snapshot_mu_);
  return snapshot_;
}

BatchHistogram TcpServer::batch_histogram() const {
  std::lock_guard lock(snapshot_mu_);
  return snapshot_histogram_;
}

}  // namespace pd3
