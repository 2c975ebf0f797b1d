// prefetch.cpp — the native side of `npm run bench -- prefetch` (bench/prefetch.ts).
//
//   pd3_bench_prefetch app [--records N] [--requests M] [--value-size V] [--interval-us U] [--wait-us W]
//                          [--client-cpu C] [--app-ip A.B.C.D] [--client-netns NAME]
//     The host app of the lead-time run: creates a segment, prints {"segment","port"} (its app port),
//     reads "go PORT" on stdin once the agent runs (PORT: where clients connect — the app's own port
//     behind the packet mirror, the agent's tee port otherwise), flushes N records to remote memory
//     through the agent, then a client thread sends M binary GETs of distinct flushed keys, one at a
//     time, U µs apart. The app serves each from the Loading Zone: checkAndReturn, polling the host
//     library in between (which forwards hints when the agent's prefetch issuer is the host), for
//     at most W µs. Last line: JSON with hits, misses and how long the app waited for the item.
//     --client-cpu C pins the client thread to CPU C (split core layout: the app's process runs on
//     the host CPU, its client stands for another machine); a refusal is reported and ignored.
//     --app-ip: the address the app listens on (default 127.0.0.1); --client-netns: the client
//     thread joins network namespace NAME (/var/run/netns/NAME) first and connects to --app-ip: the
//     mirror port of scripts/mirror-port.sh, where the agent captures a tc mirror of the traffic.
//
//   pd3_bench_prefetch parse [--requests M] [--keys K] [--reps R]
//     Parse + Host View lookup on one core: M pipelined GET requests (RESP and binary), each key
//     parsed, hashed and looked up in batches in a Host View set of K keys (half the lookups hit).
//     Last line: JSON with Mreq/s per format.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dpu/cuckoo_set.hpp"
#include "parsers/parser_flow.hpp"
#include "parsers/plugin_loader.hpp"
#include "pd3/binproto.h"
#include "pd3/host.h"
#include "pd3/record.h"
#include "segment_cleanup.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t) { return std::chrono::duration<double, std::micro>(Clock::now() - t).count(); }

// Command-line numbers: --name value.
uint64_t arg(int argc, char** argv, const char* name, uint64_t dflt) {
  for (int i = 2; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::strtoull(argv[i + 1], nullptr, 10);
  return dflt;
}

// Command-line text: --name value.
const char* text_arg(int argc, char** argv, const char* name, const char* dflt) {
  for (int i = 2; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return dflt;
}

[[noreturn]] void die(const char* what, int rc) {
  std::fprintf(stderr, "pd3_bench_prefetch: %s: %s (%s)\n", what, pd3_status_str(rc), pd3_last_error());
  std::exit(1);
}

std::string key_of(uint64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "key:%010llu", (unsigned long long)i);
  return buf;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * double(v.size())))];
}

// ---- app: the lead-time run --------------------------------------------------------------------

// Waits for every request of the host handle to complete; exits on an error.
void settle(pd3_host* h, uint32_t expected) {
  pd3_completion c[64];
  for (uint32_t done = 0; done < expected;) {
    pd3_host_wait(h, 1000);
    const int n = pd3_host_poll(h, c, 64);
    if (n < 0) die("poll", n);
    for (int i = 0; i < n; ++i)
      if (c[i].status != PD3_OK) die("remote request", c[i].status);
    done += uint32_t(n);
  }
}

// Flushes records 0..n-1 (built-in record format) to remote memory through the agent.
void load(pd3_host* h, uint64_t n, uint32_t value_size) {
  const uint32_t region_bytes = 64u << 20;
  const int rc = pd3_host_allocate(h, region_bytes, 0);
  if (rc < 0) die("allocate", rc);
  pd3_completion c;
  while (pd3_host_poll(h, &c, 1) == 0) pd3_host_wait(h, 1000);
  if (c.status != PD3_OK) die("allocate", c.status);
  const uint32_t region = c.region;
  std::vector<uint8_t> page;
  uint32_t offset = 0, pending = 0;
  auto flush = [&] {
    if (page.empty()) return;
    int w;
    while ((w = pd3_host_write(h, region, offset, page.data(), uint32_t(page.size()), 0)) == PD3_E_AGAIN) settle(h, pending), pending = 0;
    if (w < 0) die("write", w);
    ++pending;
    offset += uint32_t(page.size());
    page.clear();
  };
  std::vector<uint8_t> value(value_size);
  for (uint64_t i = 0; i < n; ++i) {
    const std::string k = key_of(i);
    for (uint32_t b = 0; b < value_size; ++b) value[b] = uint8_t(i * 31 + b);
    const pd3_kv_header hdr{uint32_t(k.size()), value_size};
    if (offset + page.size() + sizeof hdr + k.size() + value_size > region_bytes) die("load", PD3_E_NOSPACE);
    page.insert(page.end(), reinterpret_cast<const uint8_t*>(&hdr), reinterpret_cast<const uint8_t*>(&hdr) + sizeof hdr);
    page.insert(page.end(), k.begin(), k.end());
    page.insert(page.end(), value.begin(), value.end());
    if (page.size() >= 32768) flush();
    if (pending >= 64) settle(h, pending), pending = 0;
  }
  flush();
  settle(h, pending);
}

bool read_exact(int fd, void* buf, size_t n) {
  auto* p = static_cast<uint8_t*>(buf);
  while (n > 0) {
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r <= 0) return false;
    p += r;
    n -= size_t(r);
  }
  return true;
}

bool write_all(int fd, const void* buf, size_t n) {
  return ::send(fd, buf, n, MSG_NOSIGNAL) == ssize_t(n);
}

// One binary GET of one key.
std::string bin_get(const std::string& key) {
  const pd3_bin_header h{uint32_t(4 + 2 + key.size()), PD3_BIN_MAGIC, PD3_BIN_GET, 1};
  std::string out(reinterpret_cast<const char*>(&h), sizeof h);
  const uint16_t len = uint16_t(key.size());
  out.append(reinterpret_cast<const char*>(&len), 2);
  out += key;
  return out;
}

int run_app(int argc, char** argv) {
  const uint64_t records = arg(argc, argv, "--records", 50000);
  const uint64_t requests = std::min(arg(argc, argv, "--requests", 5000), records);
  const uint32_t value_size = uint32_t(arg(argc, argv, "--value-size", 64));
  const uint64_t interval_us = arg(argc, argv, "--interval-us", 200);
  const uint64_t wait_us = arg(argc, argv, "--wait-us", 2000);

  const std::string name = "pd3-bench-prefetch-" + std::to_string(getpid());
  pd3_host_config cfg{};
  cfg.name = name.c_str();
  cfg.flags = PD3_HOST_REPLACE;
  pd3_host* h = nullptr;
  if (const int rc = pd3_host_create(&cfg, &h)) die("create", rc);
  pd3::bench::unlink_segment_at_exit(pd3_host_name(h));  // also when a failure exits early

  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  const char* app_ip = text_arg(argc, argv, "--app-ip", "127.0.0.1");
  if (inet_pton(AF_INET, app_ip, &a.sin_addr) != 1) die("--app-ip is not an IPv4 address", PD3_E_INVAL);
  socklen_t alen = sizeof a;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listener, 4) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &alen) != 0)
    die("listen", PD3_E_SYS);
  std::printf("{\"segment\":\"%s\",\"port\":%u}\n", name.c_str(), unsigned(ntohs(a.sin_port)));
  std::fflush(stdout);

  std::string go;
  unsigned client_port = 0;
  if (!std::getline(std::cin, go) || std::sscanf(go.c_str(), "go %u", &client_port) != 1) die("stdin: expected \"go PORT\"", PD3_E_INVAL);
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (!pd3_host_agent_alive(h)) {
    if (Clock::now() > deadline) die("agent", PD3_E_AGENT_DOWN);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  load(h, records, value_size);

  // Keys in a random order: a stream of reads of keys the host does not hold.
  std::vector<uint64_t> order(records);
  for (uint64_t i = 0; i < records; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937_64(42));

  const long client_cpu = long(arg(argc, argv, "--client-cpu", UINT64_MAX));
  std::thread client([&] {
    if (client_cpu >= 0 && client_cpu < CPU_SETSIZE) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(int(client_cpu), &set);
      if (const int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set); rc != 0) {
        std::fprintf(stderr, "pd3_bench_prefetch: cannot pin the client to CPU %ld (%s); it runs unpinned\n", client_cpu,
                     std::strerror(rc));
      }
    }
    if (const char* ns = text_arg(argc, argv, "--client-netns", nullptr)) {
      const int nsfd = ::open((std::string("/var/run/netns/") + ns).c_str(), O_RDONLY | O_CLOEXEC);
      if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) != 0) die("client: cannot join its network namespace", PD3_E_SYS);
      ::close(nsfd);  // setns moves only this thread: the app and its host library stay where they are
    }
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr = a.sin_addr;
    to.sin_port = htons(uint16_t(client_port));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) die("client connect", PD3_E_SYS);
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    for (uint64_t i = 0; i < requests; ++i) {
      const auto sent = Clock::now();
      const std::string req = bin_get(key_of(order[i]));
      uint8_t reply = 0;
      if (!write_all(fd, req.data(), req.size()) || !read_exact(fd, &reply, 1)) die("client", PD3_E_SYS);
      while (us_since(sent) < double(interval_us)) std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    ::close(fd);
  });

  const int conn = ::accept(listener, nullptr, nullptr);
  if (conn < 0) die("accept", PD3_E_SYS);
  const int one = 1;
  setsockopt(conn, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  std::vector<double> waits;
  waits.reserve(requests);
  uint64_t hits = 0, misses = 0;
  std::vector<uint8_t> item(value_size + 64);
  pd3_completion c[16];
  for (uint64_t i = 0; i < requests; ++i) {
    pd3_bin_header hdr;
    if (!read_exact(conn, &hdr, sizeof hdr) || hdr.length < 6 || hdr.length > 4096) die("app: bad request", PD3_E_PROTOCOL);
    std::string body(hdr.length - 4, '\0');
    if (!read_exact(conn, body.data(), body.size())) die("app: short request", PD3_E_PROTOCOL);
    const std::string key = body.substr(2);
    const auto arrived = Clock::now();
    bool hit = false;
    // The app's miss path: checkAndReturn, polling in between (an app's loop polls anyway; with
    // the host as prefetch issuer the poll is what forwards the agent's hint). Yields so the
    // agent and memory server threads sharing the two cores are not starved.
    while (us_since(arrived) < double(wait_us)) {
      if (pd3_host_check_and_return(h, key.data(), uint32_t(key.size()), item.data(), uint32_t(item.size())) > 0) {
        hit = true;
        break;
      }
      (void)pd3_host_poll(h, c, 16);
      sched_yield();
    }
    if (hit) {
      ++hits;
      waits.push_back(us_since(arrived));
    } else {
      ++misses;
    }
    const uint8_t reply = hit ? 1 : 0;
    if (!write_all(conn, &reply, 1)) die("app: reply", PD3_E_SYS);
  }
  client.join();
  ::close(conn);
  ::close(listener);
  pd3_host_close(h);
  std::printf("{\"requests\":%llu,\"hits\":%llu,\"misses\":%llu,\"app_wait_p50_us\":%.2f,\"app_wait_p99_us\":%.2f}\n",
              (unsigned long long)requests, (unsigned long long)hits, (unsigned long long)misses,
              percentile(waits, 0.5), percentile(waits, 0.99));
  return 0;
}

// ---- parse: parse + lookup per core --------------------------------------------------------------

std::string resp_get(const std::string& key) {
  return "*2\r\n$3\r\nGET\r\n$" + std::to_string(key.size()) + "\r\n" + key + "\r\n";
}

// Parses the whole stream with `parser` and looks every key up in `set`, in batches as the agent
// does; returns Mreq/s and the hits (checked by the caller).
double parse_and_lookup(const char* parser, const std::string& stream, uint64_t requests, const pd3::CuckooSet& set,
                        uint64_t* hits) {
  pd3::ParserHandle handle;
  if (const int rc = pd3::load_parser(parser, &handle)) die("load parser", rc);
  pd3::ParserFlow flow;
  if (const int rc = pd3::ParserFlow::open(handle, &flow)) die("open flow", rc);
  constexpr uint32_t kMax = 256;
  pd3_access acc[kMax];
  uint64_t hashes[kMax];
  uint8_t verdicts[kMax];
  const auto* p = reinterpret_cast<const uint8_t*>(stream.data());
  size_t at = 0;
  uint64_t found = 0, parsed = 0;
  const auto start = Clock::now();
  while (at < stream.size()) {
    uint32_t n = 0;
    size_t used = 0;
    // 4 KiB at a time, like packets of a pipelined stream.
    const size_t len = std::min<size_t>(stream.size() - at, 4096);
    if (flow.parse_request(p + at, len, acc, kMax, &n, &used) != PD3_OK || used == 0) die("parse", PD3_E_PROTOCOL);
    for (uint32_t i = 0; i < n; ++i) hashes[i] = pd3::host_view_key_hash(acc[i].key, acc[i].key_len);
    set.contains_batch(hashes, n, verdicts);
    for (uint32_t i = 0; i < n; ++i) found += verdicts[i];
    parsed += n;
    at += used;
  }
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  if (parsed != requests) die("parse: lost requests", PD3_E_PROTOCOL);
  *hits = found;
  return double(requests) / secs / 1e6;
}

int run_parse(int argc, char** argv) {
  const uint64_t requests = arg(argc, argv, "--requests", 2000000);
  const uint64_t keys = arg(argc, argv, "--keys", 1000000);
  const uint64_t reps = arg(argc, argv, "--reps", 3);
  pd3::CuckooOptions co;
  co.capacity = keys;
  std::unique_ptr<pd3::CuckooSet> set;
  if (const int rc = pd3::CuckooSet::create(co, &set)) die("Host View", rc);
  for (uint64_t i = 0; i < keys; ++i) {
    const std::string k = key_of(i);
    if (const int rc = set->insert(pd3::host_view_key_hash(k.data(), k.size()))) die("insert", rc);
  }
  // Half the requested keys are held (i < keys), half are not.
  std::mt19937_64 rng(7);
  std::string resp_stream, bin_stream;
  uint64_t expected_hits = 0;
  for (uint64_t r = 0; r < requests; ++r) {
    const uint64_t i = rng() % (2 * keys);
    expected_hits += i < keys;
    const std::string k = key_of(i);
    resp_stream += resp_get(k);
    bin_stream += bin_get(k);
  }
  std::vector<double> resp_rates, bin_rates;
  for (uint64_t rep = 0; rep < reps; ++rep) {
    uint64_t hits = 0;
    resp_rates.push_back(parse_and_lookup("resp", resp_stream, requests, *set, &hits));
    if (hits != expected_hits) die("resp: wrong verdicts", PD3_E_CORRUPT);
    bin_rates.push_back(parse_and_lookup("binary", bin_stream, requests, *set, &hits));
    if (hits != expected_hits) die("binary: wrong verdicts", PD3_E_CORRUPT);
  }
  std::printf("{\"requests\":%llu,\"keys\":%llu,\"resp_mreq_s\":%.3f,\"binary_mreq_s\":%.3f}\n",
              (unsigned long long)requests, (unsigned long long)keys, percentile(resp_rates, 0.5),
              percentile(bin_rates, 0.5));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "app") == 0) return run_app(argc, argv);
  if (argc >= 2 && std::strcmp(argv[1], "parse") == 0) return run_parse(argc, argv);
  std::fprintf(stderr, "usage: pd3_bench_prefetch app|parse [options] (see bench/native/prefetch.cpp)\n");
  return 2;
}
