// options.cpp — flag parsing: `--flag value` or `--flag=value`, each flag at most once; a bad value
// yields one line naming the flag and what it must be.
#include "options.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string_view>

namespace pd3::loadgen {

namespace {

constexpr const char* kUsage = R"(usage: pd3-loadgen --port PORT [flags]

A single-threaded epoll load generator for PD3's example data systems: YCSB workloads over RESP
(pd3-kv, Redis) or the hash map's binary protocol. Human summary on stderr, one JSON object on
stdout. Exit 0: ran clean; 1: the run failed (connection error, wrong value, too many errors);
2: bad command line.

target
  --protocol resp|binary   resp (GET/SET/MGET) or binary (examples/hashmap: 8-byte keys/values) [resp]
  --host HOST              server address [127.0.0.1]
  --port PORT              server port (required)

workload (native/workloads/ycsb.hpp; keys user000000000042 in resp, u64 little-endian in binary)
  --workload A..F          YCSB core workload [A]
  --distribution D         uniform|zipfian|latest [latest for D, zipfian otherwise]
  --records N              records 0..N-1 [100000]
  --value-size BYTES       value length, resp only (binary values are 8 bytes) [100]
  --seed N                 the one generator's seed [1]
  --scan-max N             a SCAN reads min(length, N) consecutive keys with one MGET / GET [10]
  --load                   first write every record (version 0), pipelined, not measured

run
  --operations N           measured operations (0: only --load) [run by --duration]
  --duration S             measured seconds (decimals allowed) [10]
  --warmup S               seconds of unmeasured operations first [0]
  --connections N          TCP connections [4]
  --pipeline D             requests outstanding per connection, 1..4096 [16]
  --rate R                 open loop: R operations/s on a fixed schedule, latency measured from
                           each operation's scheduled time [closed loop]
  --verify                 check every value read against a model of each key's versions;
                           a wrong value fails the run (resp: needs --load)
  --max-errors N           error replies tolerated before the exit status is 1 [0]
  --reply-timeout S        fail if requests are outstanding and nothing arrives for S s [10]
  --cpu N                  pin to CPU N (sched_setaffinity; a refusal is reported, the run goes on)
  --help                   this text

JSON fields: ops, seconds, kops, p50_us, p99_us, p999_us, max_us, mean_us, errors, error_replies,
unexpected_replies, connection_errors, wrong_values, not_found, verified_reads, requests, backlog,
connections, pipeline, protocol, workload, distribution, records, value_size, rate, loaded,
load_seconds, cpu_user_s, cpu_sys_s, cpu_us_per_op (measured window), pinned_cpu. docs/loadgen.md.
)";

const std::set<std::string_view> kSwitches = {"--load", "--verify", "--help", "-h"};
const std::set<std::string_view> kValued = {
    "--protocol", "--host",       "--port",     "--workload",   "--distribution", "--records", "--value-size",
    "--seed",     "--operations", "--duration", "--warmup",     "--connections",  "--pipeline", "--rate",
    "--scan-max", "--max-errors", "--reply-timeout", "--cpu"};

// Collects one flag's failure; the first one wins.
struct Checker {
  ParseResult* result;
  bool fail(const std::string& msg) {
    if (result->action != ParseResult::Action::kUsageError) {
      result->action = ParseResult::Action::kUsageError;
      result->error = msg;
    }
    return false;
  }
};

bool parse_u64(const std::string& s, uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const uint64_t d = uint64_t(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

bool parse_double(const std::string& s, double* out) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool integer_in(Checker& c, const std::string& flag, const std::string& v, uint64_t lo, uint64_t hi, uint64_t* out) {
  if (!parse_u64(v, out) || *out < lo || *out > hi) {
    return c.fail(flag + ": must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got '" + v + "'");
  }
  return true;
}

// lo < x <= hi, or lo <= x <= hi when lo_inclusive.
bool seconds_in(Checker& c, const std::string& flag, const std::string& v, double lo, bool lo_inclusive, double hi,
                double* out) {
  if (!parse_double(v, out) || (lo_inclusive ? *out < lo : *out <= lo) || *out > hi) {
    char range[96];
    std::snprintf(range, sizeof range, "%s %g and at most %g", lo_inclusive ? "at least" : "above", lo, hi);
    return c.fail(flag + ": must be a number " + range + ", got '" + v + "'");
  }
  return true;
}

}  // namespace

const char* usage_text() { return kUsage; }

const char* protocol_name(Protocol p) { return p == Protocol::kResp ? "resp" : "binary"; }

const char* distribution_name(ycsb::Distribution d) {
  switch (d) {
    case ycsb::Distribution::kUniform: return "uniform";
    case ycsb::Distribution::kZipfian: return "zipfian";
    case ycsb::Distribution::kLatest: return "latest";
    default: return "default";
  }
}

ParseResult parse_options(int argc, char** argv, Options* o) {
  ParseResult result;
  Checker c{&result};
  std::set<std::string> seen;                // switches given
  std::map<std::string, std::string> given;  // valued flags given
  auto value_of = [&](const char* flag) -> const std::string* {
    const auto it = given.find(flag);
    return it == given.end() ? nullptr : &it->second;
  };

  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool inline_value = false;
    if (const size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      inline_value = true;
    }
    if (kSwitches.count(arg)) {
      if (inline_value) {
        c.fail(arg + ": takes no value, got '" + value + "'");
        return result;
      }
      if (arg == "--help" || arg == "-h") {
        result.action = ParseResult::Action::kHelp;
        return result;
      }
      if (!seen.insert(arg).second) {
        c.fail(arg + ": given twice");
        return result;
      }
      if (arg == "--load") o->load = true;
      if (arg == "--verify") o->verify = true;
      continue;
    }
    const auto it = kValued.find(arg);
    if (it == kValued.end()) {
      c.fail(arg.rfind("-", 0) == 0 ? "unknown flag '" + arg + "' (see --help)"
                                    : "unexpected argument '" + arg + "' (flags start with --; see --help)");
      return result;
    }
    if (!inline_value) {
      if (i + 1 >= argc) {
        c.fail(arg + ": needs a value");
        return result;
      }
      value = argv[++i];
    }
    if (!given.emplace(arg, value).second) {
      c.fail(arg + ": given twice");
      return result;
    }
  }

  uint64_t u = 0;
  if (const std::string* v = value_of("--protocol")) {
    if (*v == "resp") o->protocol = Protocol::kResp;
    else if (*v == "binary") o->protocol = Protocol::kBinary;
    else c.fail("--protocol: must be resp or binary, got '" + *v + "'");
  }
  if (const std::string* v = value_of("--host")) {
    if (v->empty()) c.fail("--host: must not be empty");
    o->host = *v;
  }
  if (const std::string* v = value_of("--port")) {
    if (integer_in(c, "--port", *v, 1, 65535, &u)) o->port = uint16_t(u);
  }
  if (const std::string* v = value_of("--workload")) {
    if (v->size() == 1 && std::strchr("ABCDEFabcdef", (*v)[0]) != nullptr) {
      o->workload = char(std::toupper(static_cast<unsigned char>((*v)[0])));
    } else {
      c.fail("--workload: must be one of A, B, C, D, E, F, got '" + *v + "'");
    }
  }
  if (const std::string* v = value_of("--distribution")) {
    if (*v == "uniform") o->distribution = ycsb::Distribution::kUniform;
    else if (*v == "zipfian") o->distribution = ycsb::Distribution::kZipfian;
    else if (*v == "latest") o->distribution = ycsb::Distribution::kLatest;
    else c.fail("--distribution: must be uniform, zipfian or latest, got '" + *v + "'");
  }
  if (const std::string* v = value_of("--records")) {
    if (integer_in(c, "--records", *v, 1, ycsb::kMaxRecords, &u)) o->records = u;
  }
  if (o->protocol == Protocol::kBinary) o->value_size = 8;
  if (const std::string* v = value_of("--value-size")) {
    if (integer_in(c, "--value-size", *v, 1, ycsb::kMaxValueSize, &u)) {
      if (o->protocol == Protocol::kBinary && u != 8) {
        c.fail("--value-size: the binary protocol's values are 8 bytes, got '" + *v + "'");
      }
      o->value_size = uint32_t(u);
    }
  }
  if (const std::string* v = value_of("--seed")) {
    if (integer_in(c, "--seed", *v, 0, UINT64_MAX, &u)) o->seed = u;
  }
  if (value_of("--operations") && value_of("--duration")) c.fail("--operations and --duration: give one, not both");
  if (const std::string* v = value_of("--operations")) {
    if (integer_in(c, "--operations", *v, 0, ycsb::kMaxOperations, &u)) {
      o->operations = u;
      o->operations_given = true;
      if (u == 0 && !o->load) c.fail("--operations: 0 runs nothing; it only makes sense with --load");
    }
  }
  if (const std::string* v = value_of("--duration")) seconds_in(c, "--duration", *v, 0, false, 86400, &o->duration_s);
  if (const std::string* v = value_of("--warmup")) seconds_in(c, "--warmup", *v, 0, true, 86400, &o->warmup_s);
  if (const std::string* v = value_of("--connections")) {
    if (integer_in(c, "--connections", *v, 1, 1024, &u)) o->connections = uint32_t(u);
  }
  if (const std::string* v = value_of("--pipeline")) {
    if (integer_in(c, "--pipeline", *v, 1, 4096, &u)) o->pipeline = uint32_t(u);
  }
  if (const std::string* v = value_of("--rate")) seconds_in(c, "--rate", *v, 0, false, 1e8, &o->rate);
  if (const std::string* v = value_of("--scan-max")) {
    if (integer_in(c, "--scan-max", *v, 1, 1000, &u)) o->scan_max = uint32_t(u);
  }
  if (const std::string* v = value_of("--max-errors")) {
    if (integer_in(c, "--max-errors", *v, 0, uint64_t(INT64_MAX), &u)) o->max_errors = u;
  }
  if (const std::string* v = value_of("--reply-timeout")) {
    seconds_in(c, "--reply-timeout", *v, 0, false, 3600, &o->reply_timeout_s);
  }
  if (const std::string* v = value_of("--cpu")) {
    if (integer_in(c, "--cpu", *v, 0, 1023, &u)) o->cpu = int(u);
  }
  if (!value_of("--port")) c.fail("--port: required (the server's port)");
  if (o->verify && o->protocol == Protocol::kResp && !o->load) {
    c.fail("--verify: needs --load with the resp protocol (the check starts from the values the load wrote)");
  }
  return result;
}

}  // namespace pd3::loadgen
