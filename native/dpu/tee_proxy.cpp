// tee_proxy.cpp — see tee_proxy.hpp.
#include "dpu/tee_proxy.hpp"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "pd3/status.h"

namespace pd3 {

namespace {

constexpr int kMaxEvents = 64;
constexpr uint64_t kListenTag = ~uint64_t{0};
constexpr uint64_t kWakeTag = ~uint64_t{0} - 1;

// Bytes read from one side and not yet written to the other.
struct Pipe {
  std::vector<uint8_t> buf;
  size_t sent = 0;
  bool eof = false;       // the reading side finished sending
  bool shut = false;      // we passed the end on (shutdown of the writing side)
  size_t pending() const { return buf.size() - sent; }
};

// One client connection and its connection to the app.
struct Pair {
  uint64_t id = 0;
  FlowKey key;
  UniqueFd client, app;
  bool app_connected = false;
  uint64_t connect_deadline_ns = 0;
  Pipe up;    // client → app (the parsers get a copy)
  Pipe down;  // app → client
  uint32_t client_interest = 0, app_interest = 0;
};

int resolve(const Endpoint& ep, sockaddr_in* out) {
  std::memset(out, 0, sizeof *out);
  out->sin_family = AF_INET;
  out->sin_port = htons(ep.port);
  if (inet_pton(AF_INET, ep.host.c_str(), &out->sin_addr) != 1)
    return fail(PD3_E_INVAL, "'%s' is not an IPv4 address", ep.host.c_str());
  return PD3_OK;
}

// The proxy's implementation: everything below runs on its thread except start/stop/stats.
class Proxy final : public TeeProxy {
 public:
  Proxy(const TeeProxyOptions& o, FlowCallbacks callbacks) : options_(o), callbacks_(std::move(callbacks)) {}
  ~Proxy() override { stop(); }

  int launch() {
    if (const int rc = resolve(options_.app, &app_addr_)) return rc;
    sockaddr_in listen_addr{};
    if (const int rc = resolve(options_.listen, &listen_addr)) return rc;
    listen_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    const int one = 1;
    setsockopt(listen_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (!listen_.valid() || ::bind(listen_.get(), reinterpret_cast<sockaddr*>(&listen_addr), sizeof listen_addr) != 0 ||
        ::listen(listen_.get(), 512) != 0)
      return fail(PD3_E_SYS, "tee proxy: cannot listen on %s: %s", options_.listen.str().c_str(), strerror(errno));
    socklen_t len = sizeof listen_addr;
    getsockname(listen_.get(), reinterpret_cast<sockaddr*>(&listen_addr), &len);
    port_ = ntohs(listen_addr.sin_port);
    epoll_.reset(epoll_create1(EPOLL_CLOEXEC));
    wake_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!epoll_.valid() || !wake_.valid()) return fail(PD3_E_SYS, "tee proxy: epoll/eventfd: %s", strerror(errno));
    add(listen_.get(), EPOLLIN, kListenTag);
    add(wake_.get(), EPOLLIN, kWakeTag);
    thread_ = std::thread([this] { run(); });
    return PD3_OK;
  }

  void stop() override {
    std::lock_guard lock(stop_mu_);
    if (!thread_.joinable()) return;
    // relaxed: the eventfd write below wakes the thread, and join() orders the rest.
    stop_.store(true, std::memory_order_relaxed);
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_.get(), &one, sizeof one);
    thread_.join();
  }

  uint16_t port() const override { return port_; }

  TeeProxyStats stats() const override {
    TeeProxyStats s;
    // relaxed: statistics, each written by the proxy thread only.
    s.connections = connections_.load(std::memory_order_relaxed);
    s.connections_total = connections_total_.load(std::memory_order_relaxed);
    s.refused = refused_.load(std::memory_order_relaxed);
    s.bytes_to_app = bytes_to_app_.load(std::memory_order_relaxed);
    s.bytes_to_client = bytes_to_client_.load(std::memory_order_relaxed);
    return s;
  }

  LogQueue& log() override { return log_; }

 private:
  static void bump(std::atomic<uint64_t>& c, uint64_t n = 1) {
    // relaxed: single writer (the proxy thread), readers want a recent total.
    c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }

  void add(int fd, uint32_t events, uint64_t tag) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag;
    epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev);
  }
  static uint64_t tag(uint64_t id, bool app) { return (id << 1) | (app ? 1 : 0); }

  void run() {
    epoll_event events[kMaxEvents];
    // relaxed: see stop().
    while (!stop_.load(std::memory_order_relaxed)) {
      const int n = epoll_wait(epoll_.get(), events, kMaxEvents, 100);
      for (int i = 0; i < n; ++i) {
        const uint64_t t = events[i].data.u64;
        if (t == kListenTag) {
          accept_all();
        } else if (t != kWakeTag) {
          auto it = pairs_.find(t >> 1);
          if (it != pairs_.end()) step(*it->second);
        }
      }
      expire_connects();
    }
    for (auto& [id, p] : pairs_)
      if (p->app_connected && callbacks_.close) callbacks_.close(id, FlowEnd::kShutdown);
    pairs_.clear();
  }

  void accept_all() {
    for (;;) {
      sockaddr_in peer{};
      socklen_t len = sizeof peer;
      UniqueFd c(accept4(listen_.get(), reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (!c.valid()) return;  // EAGAIN, or out of descriptors: the next readiness retries
      if (pairs_.size() >= options_.max_connections) {
        bump(refused_);
        log_.log(LogLevel::kWarn, "tee.refused", "connection refused: %u connections open", options_.max_connections);
        continue;
      }
      auto p = std::make_unique<Pair>();
      p->id = next_id_++;
      p->key.client_ip = ntohl(peer.sin_addr.s_addr);
      p->key.client_port = ntohs(peer.sin_port);
      p->key.server_ip = ntohl(app_addr_.sin_addr.s_addr);
      p->key.server_port = options_.app.port;
      p->client = std::move(c);
      p->app.reset(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      const int rc = p->app.valid() ? ::connect(p->app.get(), reinterpret_cast<sockaddr*>(&app_addr_), sizeof app_addr_) : -1;
      if (rc != 0 && errno != EINPROGRESS) {
        bump(refused_);
        log_.log(LogLevel::kWarn, "tee.app_unreachable", "cannot connect to the app at %s: %s",
                 options_.app.str().c_str(), strerror(errno));
        continue;
      }
      p->connect_deadline_ns = now_ns() + uint64_t(options_.connect_timeout_ms) * 1000000ull;
      const int one = 1;
      setsockopt(p->client.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      setsockopt(p->app.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      add(p->client.get(), 0, tag(p->id, false));
      add(p->app.get(), EPOLLOUT, tag(p->id, true));
      p->app_interest = EPOLLOUT;
      bump(connections_);
      bump(connections_total_);
      Pair& ref = *p;
      pairs_.emplace(p->id, std::move(p));
      if (rc == 0) step(ref);
    }
  }

  // Moves whatever can move for one pair; closes it when both directions are done or it failed.
  void step(Pair& p) {
    if (!p.app_connected) {
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(p.app.get(), SOL_SOCKET, SO_ERROR, &err, &len);
      sockaddr_in peer{};
      socklen_t plen = sizeof peer;
      if (err != 0) return close_pair(p, "the app refused the connection", true);
      if (getpeername(p.app.get(), reinterpret_cast<sockaddr*>(&peer), &plen) != 0) return;  // still connecting
      p.app_connected = true;
      if (callbacks_.open) callbacks_.open(p.id, p.key, /*synced=*/true);
    }
    bool ok = forward(p, p.client.get(), p.app.get(), p.up, true) && forward(p, p.app.get(), p.client.get(), p.down, false);
    if (!ok) return close_pair(p, "connection reset", false, FlowEnd::kReset);
    if (p.up.shut && p.down.shut) return close_pair(p, nullptr, false, FlowEnd::kFin);
    update_interest(p);
  }

  // Reads what `from` has (while the pipe has room), writes what `to` takes, passes EOF on.
  // The up direction hands each newly read run to the sink right after trying to forward it, so
  // the app never waits for the parser. Returns false on a socket error.
  bool forward(Pair& p, int from, int to, Pipe& pipe, bool up) {
    if (!flush(to, pipe, up)) return false;
    while (!pipe.eof && pipe.pending() < options_.buffer_bytes) {
      if (pipe.sent > 0) {  // drop what was written, so the buffer never outgrows buffer_bytes
        pipe.buf.erase(pipe.buf.begin(), pipe.buf.begin() + long(pipe.sent));
        pipe.sent = 0;
      }
      const size_t at = pipe.buf.size();
      const size_t room = options_.buffer_bytes - pipe.pending();
      pipe.buf.resize(at + room);
      const ssize_t n = ::recv(from, pipe.buf.data() + at, room, 0);
      pipe.buf.resize(at + (n > 0 ? size_t(n) : 0));
      if (n == 0) {
        pipe.eof = true;
        break;
      }
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        return false;
      }
      if (!flush(to, pipe, up)) return false;
      if (up) callbacks_.deliver(p.id, pipe.buf.data() + at, size_t(n), false);  // flush() moved no bytes
    }
    if (pipe.eof && pipe.pending() == 0 && !pipe.shut) {
      ::shutdown(to, SHUT_WR);
      pipe.shut = true;
    }
    return true;
  }

  // Writes what `to` takes from the pipe; compacts what was written.
  bool flush(int to, Pipe& pipe, bool up) {
    while (pipe.pending() > 0) {
      const ssize_t n = ::send(to, pipe.buf.data() + pipe.sent, pipe.pending(), MSG_NOSIGNAL);
      if (n > 0) {
        pipe.sent += size_t(n);
        bump(up ? bytes_to_app_ : bytes_to_client_, uint64_t(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      return false;
    }
    return true;
  }

  void update_interest(Pair& p) {
    const uint32_t client = (p.up.eof || p.up.pending() >= options_.buffer_bytes ? 0u : uint32_t(EPOLLIN)) |
                            (p.down.pending() > 0 ? uint32_t(EPOLLOUT) : 0u);
    const uint32_t app = (p.down.eof || p.down.pending() >= options_.buffer_bytes ? 0u : uint32_t(EPOLLIN)) |
                         (p.up.pending() > 0 ? uint32_t(EPOLLOUT) : 0u);
    modify(p.client.get(), &p.client_interest, client, tag(p.id, false));
    modify(p.app.get(), &p.app_interest, app, tag(p.id, true));
  }

  void modify(int fd, uint32_t* current, uint32_t want, uint64_t t) {
    if (*current == want) return;
    epoll_event ev{};
    ev.events = want;
    ev.data.u64 = t;
    epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, fd, &ev);
    *current = want;
  }

  void expire_connects() {
    const uint64_t now = now_ns();
    std::vector<Pair*> late;
    for (auto& [id, p] : pairs_)
      if (!p->app_connected && now > p->connect_deadline_ns) late.push_back(p.get());
    for (Pair* p : late) close_pair(*p, "the app did not accept the connection in time", true);
  }

  void close_pair(Pair& p, const char* why, bool refused, FlowEnd end = FlowEnd::kReset) {
    if (why != nullptr)
      log_.log(refused ? LogLevel::kWarn : LogLevel::kInfo, refused ? "tee.app_unreachable" : "tee.reset",
               "connection %llu: %s", (unsigned long long)p.id, why);
    if (refused) bump(refused_);
    if (p.app_connected && callbacks_.close) callbacks_.close(p.id, end);
    // relaxed: single writer, see bump().
    connections_.store(connections_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
    pairs_.erase(p.id);  // closes both sockets (epoll forgets closed descriptors)
  }

  TeeProxyOptions options_;
  FlowCallbacks callbacks_;
  sockaddr_in app_addr_{};
  UniqueFd listen_, epoll_, wake_;
  uint16_t port_ = 0;
  std::map<uint64_t, std::unique_ptr<Pair>> pairs_;
  uint64_t next_id_ = 1;
  LogQueue log_;
  std::thread thread_;
  std::mutex stop_mu_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> connections_{0}, connections_total_{0}, refused_{0}, bytes_to_app_{0}, bytes_to_client_{0};
};

}  // namespace

int TeeProxy::start(const TeeProxyOptions& options, FlowCallbacks callbacks, std::unique_ptr<TeeProxy>* out) {
  if (!callbacks.deliver || options.max_connections == 0 || options.buffer_bytes == 0 || options.app.port == 0)
    return fail(PD3_E_INVAL, "tee proxy: a deliver callback, an app port, max_connections and buffer_bytes are required");
  auto p = std::make_unique<Proxy>(options, std::move(callbacks));
  if (const int rc = p->launch()) return rc;
  *out = std::move(p);
  return PD3_OK;
}

}  // namespace pd3
