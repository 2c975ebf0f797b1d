// tee_proxy_test.cpp — the tee proxy backend: bytes pass both ways unchanged, the sink sees exactly
// what each client sent, back-pressure, half-close, an unreachable app, many connections.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.hpp"
#include "dpu/tee_proxy.hpp"
#include "harness.hpp"
#include "loopback_apps.hpp"
#include "util.hpp"

namespace {

// Records every flow's bytes (the proxy thread writes, the test reads).
class RecordingSink {
 public:
  pd3::FlowCallbacks callbacks() {
    return {[this](uint64_t flow, const uint8_t* data, size_t len, bool after_gap) {
              std::lock_guard lock(mu_);
              bytes[flow].insert(bytes[flow].end(), data, data + len);
              gaps += after_gap;
            },
            [this](uint64_t flow, const pd3::FlowKey& key, bool synced) {
              std::lock_guard lock(mu_);
              ++opened[flow];
              unsynced += !synced;
              last_key = key;
            },
            [this](uint64_t flow, pd3::FlowEnd) {
              std::lock_guard lock(mu_);
              ++closed[flow];
            }};
  }
  template <class Fn>
  auto with(Fn&& fn) {
    std::lock_guard lock(mu_);
    return fn();
  }
  std::map<uint64_t, std::vector<uint8_t>> bytes;
  std::map<uint64_t, int> opened, closed;
  int gaps = 0;
  int unsynced = 0;
  pd3::FlowKey last_key;

 private:
  std::mutex mu_;
};

// An app that echoes every byte, optionally after `delay_ms` without reading.
class EchoApp {
 public:
  explicit EchoApp(int delay_ms = 0) : delay_ms_(delay_ms) {
    fd_ = pd3test::listen_loopback(64, &port);
    thread_ = std::thread([this] { serve(); });
  }
  ~EchoApp() {
    stop_ = true;
    ::shutdown(fd_.get(), SHUT_RDWR);
    thread_.join();
    for (auto& t : conns_) t.join();
  }
  uint16_t port = 0;

 private:
  void serve() {
    for (;;) {
      const int c = ::accept(fd_.get(), nullptr, nullptr);
      if (c < 0) return;
      conns_.emplace_back([this, c] {
        if (delay_ms_) usleep(useconds_t(delay_ms_) * 1000);
        std::vector<uint8_t> buf(65536);
        for (;;) {
          const ssize_t n = ::recv(c, buf.data(), buf.size(), 0);
          if (n <= 0) break;
          for (ssize_t off = 0; off < n;) {
            const ssize_t w = ::send(c, buf.data() + off, size_t(n - off), MSG_NOSIGNAL);
            if (w <= 0) break;
            off += w;
          }
        }
        ::close(c);
      });
    }
  }
  int delay_ms_;
  pd3::UniqueFd fd_;
  std::thread thread_;
  std::vector<std::thread> conns_;
  std::atomic<bool> stop_{false};
};


// Sends `data` in random pieces while reading the echo back; returns the echo.
std::vector<uint8_t> round_trip(int s, const std::vector<uint8_t>& data, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> echo;
  size_t sent = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (echo.size() < data.size() && pd3test::ms_since(t0) < 10000) {
    pollfd p{s, short(POLLIN | (sent < data.size() ? POLLOUT : 0)), 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    if ((p.revents & POLLOUT) && sent < data.size()) {
      const size_t piece = std::min<size_t>(data.size() - sent, 1 + rng() % 70000);
      const ssize_t n = ::send(s, data.data() + sent, piece, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) sent += size_t(n);
    }
    if (p.revents & POLLIN) {
      uint8_t buf[65536];
      const ssize_t n = ::recv(s, buf, sizeof buf, MSG_DONTWAIT);
      if (n <= 0) break;
      echo.insert(echo.end(), buf, buf + n);
    }
  }
  return echo;
}

std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = uint8_t(rng());
  return v;
}

pd3::TeeProxyOptions options(uint16_t app_port) {
  pd3::TeeProxyOptions o;
  o.listen = {"127.0.0.1", 0};
  o.app = {"127.0.0.1", app_port};
  return o;
}

bool eventually(const std::function<bool()>& f) {
  for (int i = 0; i < 500; ++i) {
    if (f()) return true;
    usleep(10000);
  }
  return false;
}

}  // namespace

TEST(tee_proxy_bytes_pass_unchanged_and_the_sink_gets_a_copy) {
  EchoApp app;
  RecordingSink sink;
  std::unique_ptr<pd3::TeeProxy> proxy;
  REQUIRE(pd3::TeeProxy::start(options(app.port), sink.callbacks(), &proxy) == PD3_OK);
  const std::vector<uint8_t> data = random_bytes(3 << 20, 1);
  const int s = pd3test::connect_loopback(proxy->port());
  REQUIRE(s >= 0);
  CHECK(round_trip(s, data, 2) == data);
  ::close(s);
  CHECK(eventually([&] { return sink.with([&] { return sink.closed.size() == 1; }); }));
  sink.with([&] {
    REQUIRE(sink.bytes.size() == 1);
    CHECK(sink.bytes.begin()->second == data);
    CHECK_EQ(sink.opened.begin()->second, 1);
    CHECK_EQ(sink.closed.begin()->second, 1);
    CHECK_EQ(sink.gaps, 0);
    CHECK_EQ(sink.unsynced, 0);
    CHECK_EQ(sink.last_key.server_port, app.port);
    CHECK_EQ(sink.last_key.client_ip, 0x7F000001u);
    return 0;
  });
  CHECK_EQ(proxy->stats().bytes_to_app, uint64_t(data.size()));
  CHECK_EQ(proxy->stats().bytes_to_client, uint64_t(data.size()));
}

TEST(tee_proxy_many_connections_each_stream_exact) {
  EchoApp app;
  RecordingSink sink;
  std::unique_ptr<pd3::TeeProxy> proxy;
  REQUIRE(pd3::TeeProxy::start(options(app.port), sink.callbacks(), &proxy) == PD3_OK);
  constexpr int kClients = 16;
  std::vector<std::vector<uint8_t>> sent(kClients);
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int i = 0; i < kClients; ++i) {
    sent[i] = random_bytes(100000 + size_t(i) * 7919, uint64_t(100 + i));
    threads.emplace_back([&, i] {
      const int s = pd3test::connect_loopback(proxy->port());
      if (s < 0) return;
      if (round_trip(s, sent[i], uint64_t(i)) == sent[i]) ++good;
      ::close(s);
    });
  }
  for (auto& t : threads) t.join();
  CHECK_EQ(good.load(), kClients);
  CHECK(eventually([&] { return sink.with([&] { return sink.closed.size() == size_t(kClients); }); }));
  // Every client's stream reached the sink exactly (matched by content: flow ids are the proxy's).
  sink.with([&] {
    int matched = 0;
    for (const auto& want : sent)
      for (const auto& [flow, got] : sink.bytes) matched += got == want;
    CHECK_EQ(matched, kClients);
    return 0;
  });
  CHECK_EQ(proxy->stats().connections_total, uint64_t(kClients));
  CHECK(eventually([&] { return proxy->stats().connections == 0; }));
}

TEST(tee_proxy_back_pressure_from_a_slow_app_loses_nothing) {
  EchoApp app(/*delay_ms=*/400);  // reads nothing for a while
  RecordingSink sink;
  pd3::TeeProxyOptions o = options(app.port);
  o.buffer_bytes = 16 << 10;
  std::unique_ptr<pd3::TeeProxy> proxy;
  REQUIRE(pd3::TeeProxy::start(o, sink.callbacks(), &proxy) == PD3_OK);
  const std::vector<uint8_t> data = random_bytes(8 << 20, 3);
  const int s = pd3test::connect_loopback(proxy->port());
  REQUIRE(s >= 0);
  CHECK(round_trip(s, data, 4) == data);
  ::close(s);
}

TEST(tee_proxy_half_close_passes_the_end_on) {
  EchoApp app;
  RecordingSink sink;
  std::unique_ptr<pd3::TeeProxy> proxy;
  REQUIRE(pd3::TeeProxy::start(options(app.port), sink.callbacks(), &proxy) == PD3_OK);
  const int s = pd3test::connect_loopback(proxy->port());
  REQUIRE(s >= 0);
  const char msg[] = "last words";
  REQUIRE(::send(s, msg, sizeof msg, MSG_NOSIGNAL) == ssize_t(sizeof msg));
  ::shutdown(s, SHUT_WR);  // the app sees EOF, echoes, closes; we get the echo, then EOF
  std::string got;
  char buf[64];
  for (;;) {
    const ssize_t n = ::recv(s, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, size_t(n));
  }
  CHECK_EQ(got.size(), sizeof msg);
  CHECK(std::memcmp(got.data(), msg, sizeof msg) == 0);
  ::close(s);
  CHECK(eventually([&] { return sink.with([&] { return sink.closed.size() == 1; }); }));
}

TEST(tee_proxy_unreachable_app_and_bad_options) {
  RecordingSink sink;
  std::unique_ptr<pd3::TeeProxy> proxy;
  pd3::TeeProxyOptions bad = options(0);
  CHECK_EQ(pd3::TeeProxy::start(bad, sink.callbacks(), &proxy), PD3_E_INVAL);
  CHECK_EQ(pd3::TeeProxy::start(options(1), pd3::FlowCallbacks{}, &proxy), PD3_E_INVAL);
  pd3::TeeProxyOptions name = options(1);
  name.app.host = "localhost";  // an address is required, not a name
  CHECK_EQ(pd3::TeeProxy::start(name, sink.callbacks(), &proxy), PD3_E_INVAL);
  // Port 1 on loopback: nothing listens. The client's connection is closed, the sink sees nothing.
  REQUIRE(pd3::TeeProxy::start(options(1), sink.callbacks(), &proxy) == PD3_OK);
  const int s = pd3test::connect_loopback(proxy->port());
  REQUIRE(s >= 0);
  char buf[8];
  pollfd p{s, POLLIN, 0};
  CHECK(::poll(&p, 1, 3000) == 1);
  CHECK(::recv(s, buf, sizeof buf, 0) <= 0);
  ::close(s);
  CHECK(eventually([&] { return proxy->stats().refused == 1; }));
  sink.with([&] {
    CHECK(sink.opened.empty());
    return 0;
  });
}
