// options.hpp — pd3-loadgen's command line: every flag, its checks, and --help.
#pragma once

#include <cstdint>
#include <string>

#include "ycsb.hpp"

namespace pd3::loadgen {

// The wire protocol spoken to the server.
enum class Protocol : uint8_t { kResp, kBinary };

// Everything a run is configured with (defaults are the documented ones).
struct Options {
  Protocol protocol = Protocol::kResp;
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  char workload = 'A';
  ycsb::Distribution distribution = ycsb::Distribution::kDefault;  // resolved by ycsb::Workload
  uint64_t records = 100000;
  uint32_t value_size = 100;  // binary: always 8
  uint64_t seed = 1;
  uint64_t operations = 0;     // > 0: run exactly this many measured ops
  double duration_s = 10;      // used when operations == 0
  bool operations_given = false;
  double warmup_s = 0;
  bool load = false;
  uint32_t connections = 4;
  uint32_t pipeline = 16;
  double rate = 0;  // ops/s, 0 = closed loop
  bool verify = false;
  uint32_t scan_max = 10;
  uint64_t max_errors = 0;
  double reply_timeout_s = 10;
  int cpu = -1;  // -1: not pinned
};

// What parse_options decided: run, print help, or refuse (exit 2 with `error`).
struct ParseResult {
  enum class Action : uint8_t { kRun, kHelp, kUsageError } action = Action::kRun;
  std::string error;  // kUsageError: one line naming the flag
};

// Parses argv into *out; never exits or throws.
[[nodiscard]] ParseResult parse_options(int argc, char** argv, Options* out);

// The --help text.
const char* usage_text();

const char* protocol_name(Protocol p);
const char* distribution_name(ycsb::Distribution d);

}  // namespace pd3::loadgen
