// client.cpp — pd3_hashmap_client: drives pd3_hashmap over N pipelined connections (YCSB or the
// verify model) and prints one JSON line with throughput, latency percentiles and error counts.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <thread>

#include "client_connection.hpp"
#include "workload_error.hpp"

namespace pd3::hashmap {

namespace {

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

// A blocking connect, then non-blocking with TCP_NODELAY. -1 with the reason in *why.
int connect_to(const ClientOptions& o, std::string* why) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(o.host.c_str(), std::to_string(o.port).c_str(), &hints, &found); rc != 0) {
    *why = std::string("cannot resolve ") + o.host + ": " + gai_strerror(rc);
    return -1;
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const bool ok = fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0;
  freeaddrinfo(found);
  if (!ok) {
    *why = "cannot connect to " + o.host + ":" + std::to_string(o.port) + ": " + std::strerror(errno);
    if (fd >= 0) close(fd);
    return -1;
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

// Runs a thread's connections to completion.
void drive(std::vector<std::unique_ptr<ClientConnection>>* conns, double deadline) {
  std::vector<pollfd> fds;
  bool ended = false;
  for (auto& c : *conns) c->pump();
  for (;;) {
    if (!ended && deadline > 0 && now_s() >= deadline) {
      for (auto& c : *conns) c->source().end_main_phase();
      ended = true;
    }
    fds.clear();
    for (auto& c : *conns) {
      if (!c->done()) fds.push_back({c->fd(), short(POLLIN | (c->wants_write() ? POLLOUT : 0)), 0});
    }
    if (fds.empty()) return;
    if (poll(fds.data(), fds.size(), 10) < 0 && errno != EINTR) return;
    for (auto& c : *conns) {
      if (c->done()) continue;
      const auto it = std::find_if(fds.begin(), fds.end(), [&](const pollfd& p) { return p.fd == c->fd(); });
      if (it == fds.end() || it->revents == 0) continue;
      if (it->revents & (POLLIN | POLLHUP | POLLERR)) c->on_readable();
      c->pump();
    }
  }
}

int run(const ClientOptions& o) {
  std::vector<std::vector<std::unique_ptr<ClientConnection>>> per_thread(o.threads);
  std::vector<ClientResult> results(o.threads);
  for (uint32_t c = 0; c < o.connections; ++c) {
    const uint64_t share = o.requests / o.connections + (c < o.requests % o.connections ? 1 : 0);
    std::unique_ptr<RequestSource> source;
    if (o.verify) {
      source = std::make_unique<VerifySource>(o, c, share);
    } else if (YcsbSource::create(o, c, share, &source) != PD3_OK) {
      std::fprintf(stderr, "pd3_hashmap_client: YCSB workload: %s\n", pd3::workloads::last_error());
      return 2;
    }
    std::string why;
    const int fd = connect_to(o, &why);
    if (fd < 0) {
      std::fprintf(stderr, "pd3_hashmap_client: %s\n", why.c_str());
      return 1;
    }
    const uint32_t t = c % o.threads;
    per_thread[t].push_back(std::make_unique<ClientConnection>(fd, std::move(source), o.depth, &results[t]));
  }
  const double start = now_s();
  const double deadline = o.seconds > 0 ? start + o.seconds : 0;
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < o.threads; ++t) threads.emplace_back(drive, &per_thread[t], deadline);
  for (auto& th : threads) th.join();
  const double elapsed = now_s() - start;
  ClientResult total;
  for (const ClientResult& r : results) total.merge(r);
  const double us = 1e-3;
  std::printf(
      "{\"mode\":\"%s\",\"connections\":%u,\"depth\":%u,\"batch\":%u,\"requests\":%llu,\"entries\":%llu,"
      "\"seconds\":%.3f,\"entries_per_sec\":%.1f,\"requests_per_sec\":%.1f,\"p50_us\":%.1f,\"p99_us\":%.1f,"
      "\"p999_us\":%.1f,\"not_found\":%llu,\"errors\":%llu,\"verified\":%llu,\"mismatches\":%llu,\"broken\":%llu}\n",
      o.verify ? "verify" : "ycsb", o.connections, o.depth, o.batch, (unsigned long long)total.requests,
      (unsigned long long)total.entries, elapsed, double(total.entries) / elapsed, double(total.requests) / elapsed,
      double(total.latency.percentile(0.50)) * us, double(total.latency.percentile(0.99)) * us,
      double(total.latency.percentile(0.999)) * us, (unsigned long long)total.not_found,
      (unsigned long long)total.errors, (unsigned long long)total.verified, (unsigned long long)total.mismatches,
      (unsigned long long)total.broken);
  std::fflush(stdout);
  return total.mismatches == 0 && total.broken == 0 && (!o.verify || total.errors == 0) ? 0 : 1;
}

}  // namespace

}  // namespace pd3::hashmap

int main(int argc, char** argv) {
  const pd3::hashmap::ClientOptions options = pd3::hashmap::parse_client_options(argc, argv);
  return pd3::hashmap::run(options);
}
