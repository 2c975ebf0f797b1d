// client_options.cpp — flag parsing and checks for pd3_hashmap_client.
#include "client_options.hpp"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "cli_values.hpp"

namespace pd3::hashmap {

namespace {

constexpr const char* kUsage = R"(pd3_hashmap_client — load and correctness client for pd3_hashmap (examples/hashmap/README.md).

Usage: pd3_hashmap_client --connect HOST:PORT --records N [flags]

  --connect HOST:PORT      the server (or the agent's tee proxy in front of it)
  --records N              keys 0..N-1 the server loaded (its --records)
  --connections N          TCP connections (default 4)
  --threads N              client threads sharing the connections (default 1)
  --depth N                requests in flight per connection (pipelining, default 8)
  --batch N                entries per request (default 1, at most 4096)
  --requests N             requests in total (default 100000)
  --seconds S              ... or stop issuing after S seconds (whichever comes first)
  --workload W             YCSB core workload A, B, C, D or F (default B: 95% read, 5% update)
  --distribution D         uniform | zipfian | latest | sequential (default: the workload's;
                           --verify: uniform); --verify also takes slot-order: keys in the order
                           of their home slots (a stride Leap can follow; needs --slots)
  --slots N                the server's table size (its ready line's "slots"), for slot-order
  --theta T                zipfian constant, 0 < T < 1 (default 0.99)
  --seed N                 random seed (default 1)
  --verify                 random GET/PUT/DEL checked against a model instead of YCSB: every
                           connection owns the keys k with k % connections == its index, so each
                           answer is known exactly; then every key is read back once
  --mix G:P:D              --verify: weights of GET, PUT and DEL (default 50:30:20)
  --key-range N            --verify: keys 0..N-1 (default records + records/8 + connections)
  --no-sweep               --verify: skip the final read-back
  --help                   this text

Prints one JSON line: throughput (entries/s), request latency p50/p99/p999 in microseconds, error
and mismatch counts. Exit status 0, 1 if an answer was wrong or the server misbehaved, 2 for a bad
command line.
)";

[[noreturn]] void usage_error(const std::string& what) {
  std::fprintf(stderr, "pd3_hashmap_client: %s\n(see pd3_hashmap_client --help)\n", what.c_str());
  std::exit(2);
}

const std::set<std::string> kSwitches = {"--verify", "--no-sweep", "--help"};
const std::set<std::string> kFlags = {"--connect",  "--records",  "--connections", "--threads", "--depth",
                                      "--batch",    "--requests", "--seconds",     "--workload", "--distribution",
                                      "--theta",    "--seed",     "--mix",         "--key-range", "--slots"};

uint64_t whole(const std::string& flag, const std::string& v, uint64_t lo, uint64_t hi) {
  return whole_in_range(flag, v, lo, hi, usage_error);
}

}  // namespace

ClientOptions parse_client_options(int argc, char** argv) {
  std::map<std::string, std::string> given = gather_flags(argc, argv, kSwitches, kFlags, kUsage, usage_error);
  const auto has = [&](const char* f) { return given.count(f) != 0; };

  ClientOptions o;
  if (!has("--connect")) usage_error("--connect HOST:PORT is required");
  if (!parse_endpoint(given["--connect"], false, &o.host, &o.port)) {
    usage_error("--connect: expected HOST:PORT with a port from 1 to 65535, got \"" + given["--connect"] + "\"");
  }
  if (!has("--records")) usage_error("--records is required (the number of records the server loaded)");
  o.records = whole("--records", given["--records"], 1, uint64_t(1) << 36);
  if (has("--connections")) o.connections = uint32_t(whole("--connections", given["--connections"], 1, 4096));
  if (has("--threads")) o.threads = uint32_t(whole("--threads", given["--threads"], 1, 256));
  if (o.threads > o.connections) o.threads = o.connections;
  if (has("--depth")) o.depth = uint32_t(whole("--depth", given["--depth"], 1, 4096));
  if (has("--batch")) o.batch = uint32_t(whole("--batch", given["--batch"], 1, 4096));
  if (has("--requests")) o.requests = whole("--requests", given["--requests"], 1, uint64_t(1) << 40);
  if (has("--seconds") && (!parse_decimal(given["--seconds"], &o.seconds) || !(o.seconds > 0))) {
    usage_error("--seconds: must be a number above 0, got \"" + given["--seconds"] + "\"");
  }
  if (has("--workload")) {
    const std::string& w = given["--workload"];
    if (w == "E") usage_error("--workload: E (scans) has no meaning for a hash map");
    if (w.size() != 1 || std::string("ABCDF").find(w[0]) == std::string::npos) {
      usage_error("--workload: must be A, B, C, D or F, got \"" + w + "\"");
    }
    o.workload = w[0];
  }
  if (has("--distribution")) {
    static const std::map<std::string, KeyOrder> orders = {{"uniform", KeyOrder::kUniform},
                                                           {"zipfian", KeyOrder::kZipfian},
                                                           {"latest", KeyOrder::kLatest},
                                                           {"sequential", KeyOrder::kSequential},
                                                           {"slot-order", KeyOrder::kSlotOrder}};
    const auto d = orders.find(given["--distribution"]);
    if (d == orders.end()) {
      usage_error("--distribution: must be uniform, zipfian, latest, sequential or slot-order, got \"" +
                  given["--distribution"] + "\"");
    }
    o.order = d->second;
  }
  if (has("--theta") && (!parse_decimal(given["--theta"], &o.theta) || !(o.theta > 0 && o.theta < 1))) {
    usage_error("--theta: must be above 0 and below 1, got \"" + given["--theta"] + "\"");
  }
  if (has("--seed")) o.seed = whole("--seed", given["--seed"], 0, UINT64_MAX);
  o.verify = has("--verify");
  o.sweep = !has("--no-sweep");
  if (!o.verify && (has("--mix") || has("--key-range") || has("--no-sweep"))) {
    usage_error("--mix, --key-range and --no-sweep apply to --verify only");
  }
  if (o.verify && has("--workload")) usage_error("--workload: not used with --verify (give --mix)");
  if (o.verify && o.order == KeyOrder::kLatest) usage_error("--distribution latest: not used with --verify");
  if (!o.verify && o.order == KeyOrder::kSlotOrder) usage_error("--distribution slot-order: --verify only");
  if (has("--slots")) o.slots = whole("--slots", given["--slots"], 1, uint64_t(1) << 37);
  if ((o.order == KeyOrder::kSlotOrder) != has("--slots")) usage_error("--slots goes with --distribution slot-order");
  if (has("--mix")) {
    const std::string& m = given["--mix"];
    const size_t a = m.find(':'), b = a == std::string::npos ? a : m.find(':', a + 1);
    uint64_t g, p, d;
    if (b == std::string::npos || !parse_whole(m.substr(0, a), &g) || !parse_whole(m.substr(a + 1, b - a - 1), &p) ||
        !parse_whole(m.substr(b + 1), &d) || g + p + d == 0 || g + p + d > 1000000) {
      usage_error("--mix: expected three weights G:P:D such as 50:30:20, got \"" + m + "\"");
    }
    o.mix_get = uint32_t(g), o.mix_put = uint32_t(p), o.mix_del = uint32_t(d);
  }
  o.key_range = o.records + o.records / 8 + o.connections;
  if (has("--key-range")) o.key_range = whole("--key-range", given["--key-range"], 1, uint64_t(1) << 40);
  if (o.verify && o.key_range < o.connections) {
    usage_error("--key-range: must be at least --connections (each connection owns some keys)");
  }
  return o;
}

}  // namespace pd3::hashmap
