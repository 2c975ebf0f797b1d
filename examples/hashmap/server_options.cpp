// server_options.cpp — flag parsing and checks for pd3_hashmap.
#include "server_options.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "cli_values.hpp"

namespace pd3::hashmap {

namespace {

constexpr const char* kUsage = R"(pd3_hashmap — the PD3 paper's hash map (§8) over remote memory, serving the binary protocol
of pd3/binproto.h (examples/hashmap/README.md).

Usage: pd3_hashmap --mode MODE [flags]

  --mode MODE              local | sync | async | leap | pd3-noprefetch | pd3 (required)
  --listen HOST:PORT       client address (default 127.0.0.1:7600; port 0 = any free port)
  --records N              keys 0..N-1 bulk-loaded at start (default 100000)
  --slots N                table slots (default 2 x records, at least 64; must exceed records)
  --cache-records N        records kept in local memory (default: 1% of records, at least 1)
  --cache-percent P        ... or as a percentage of records (0 < P <= 100)
  --threads N              worker threads, each with its own pd3_host handle (default 2, 1-256)
  --segment NAME           host segment to create (pd3 modes: required, the agent attaches to it)
  --replace                remove an existing segment of that name first
  --memservers LIST        host:port[,...] of every memory server (sync, async, leap only)
  --region-bytes SIZE      bytes per remote region (default 64M; K, M, G suffixes)
  --agent-wait-ms N        pd3 modes: how long to wait for the agent's heartbeat (default 30000)
  --leap-history N         leap: miss deltas Leap keeps per worker (default 32)
  --leap-max-prefetch N    leap: largest prefetch window (default 8)
  --zone-wait-us N         pd3: a Loading Zone miss waits this long for the agent's prefetch
                           before it reads through the agent (default 0, 0-1000000)
  --log-level LEVEL        debug | info | warn | error (default info)
  --help                   this text

The memory servers' auth token is read from the environment variable PD3_TOKEN (sync, async, leap).
Logs: JSON lines on stderr. stdout: one "ready" line when serving, and a "stats" line for each
"stats" line read on stdin and at exit (SIGINT or SIGTERM). Exit status: 0 after a signal,
1 if it could not start, 2 for a bad command line.
)";

[[noreturn]] void usage_error(const std::string& what) {
  std::fprintf(stderr, "pd3_hashmap: %s\n(see pd3_hashmap --help)\n", what.c_str());
  std::exit(2);
}

const std::map<std::string, Mode>& modes() {
  static const std::map<std::string, Mode> m = {
      {"local", Mode::kLocal}, {"sync", Mode::kSync}, {"async", Mode::kAsync},
      {"leap", Mode::kLeap},   {"pd3-noprefetch", Mode::kPd3NoPrefetch}, {"pd3", Mode::kPd3},
  };
  return m;
}

// Flags that take no value.
const std::set<std::string> kSwitches = {"--replace", "--help"};
const std::set<std::string> kFlags = {
    "--mode",     "--listen",       "--records",       "--slots",        "--cache-records", "--cache-percent",
    "--threads",  "--segment",      "--memservers",    "--region-bytes", "--agent-wait-ms", "--leap-history",
    "--leap-max-prefetch", "--zone-wait-us", "--log-level",
};

uint64_t whole(const std::string& flag, const std::string& v, uint64_t lo, uint64_t hi) {
  return whole_in_range(flag, v, lo, hi, usage_error);
}

}  // namespace

const char* mode_name(Mode m) {
  for (const auto& [name, mode] : modes()) {
    if (mode == m) return name.c_str();
  }
  return "?";
}

ServerOptions parse_server_options(int argc, char** argv) {
  std::map<std::string, std::string> given = gather_flags(argc, argv, kSwitches, kFlags, kUsage, usage_error);
  const auto has = [&](const char* f) { return given.count(f) != 0; };

  ServerOptions o;
  if (!has("--mode")) usage_error("--mode is required (local, sync, async, leap, pd3-noprefetch or pd3)");
  const auto mode = modes().find(given["--mode"]);
  if (mode == modes().end()) {
    usage_error("--mode: must be local, sync, async, leap, pd3-noprefetch or pd3, got \"" + given["--mode"] + "\"");
  }
  o.mode = mode->second;
  if (has("--listen") && !parse_endpoint(given["--listen"], true, &o.listen_host, &o.listen_port)) {
    usage_error("--listen: expected HOST:PORT with a port from 0 to 65535, got \"" + given["--listen"] + "\"");
  }
  if (has("--records")) o.records = whole("--records", given["--records"], 0, uint64_t(1) << 36);
  o.slots = o.records * 2 < 64 ? 64 : o.records * 2;
  if (has("--slots")) o.slots = whole("--slots", given["--slots"], 1, uint64_t(1) << 37);
  if (o.slots <= o.records) {
    usage_error("--slots: must exceed --records (" + std::to_string(o.records) + "), got " + std::to_string(o.slots));
  }
  if (has("--cache-records") && has("--cache-percent")) usage_error("give --cache-records or --cache-percent, not both");
  double percent = 1.0;
  if (has("--cache-percent")) {
    if (!parse_decimal(given["--cache-percent"], &percent) || !(percent > 0 && percent <= 100)) {
      usage_error("--cache-percent: must be a number above 0 and at most 100, got \"" + given["--cache-percent"] + "\"");
    }
  }
  o.cache_records = uint64_t(double(o.records) * percent / 100.0);
  if (has("--cache-records")) o.cache_records = whole("--cache-records", given["--cache-records"], 1, uint64_t(1) << 36);
  if (o.cache_records < 1) o.cache_records = 1;
  if (has("--threads")) o.threads = uint32_t(whole("--threads", given["--threads"], 1, 256));
  if (has("--region-bytes")) {
    uint64_t bytes;
    if (!parse_size(given["--region-bytes"], &bytes)) {
      usage_error("--region-bytes: expected a size such as 65536, 64K or 64M, got \"" + given["--region-bytes"] + "\"");
    }
    // A region holds whole slots; offsets are 32-bit and the memory server caps a region below 4 GiB.
    if (bytes < 4096 || bytes > (uint64_t(4) << 30) - 4096) {
      usage_error("--region-bytes: must be from 4K to 4G-4K, got " + given["--region-bytes"]);
    }
    o.region_bytes = uint32_t(bytes);
  }
  if (has("--agent-wait-ms")) o.agent_wait_ms = uint32_t(whole("--agent-wait-ms", given["--agent-wait-ms"], 1, 3600000));
  if (has("--leap-history")) o.leap_history = uint32_t(whole("--leap-history", given["--leap-history"], 1, 4096));
  if (has("--leap-max-prefetch")) {
    o.leap_max_prefetch = uint32_t(whole("--leap-max-prefetch", given["--leap-max-prefetch"], 1, 4096));
  }
  if (has("--zone-wait-us")) {
    if (o.mode != Mode::kPd3) usage_error("--zone-wait-us applies to --mode pd3 only");
    o.zone_wait_us = uint32_t(whole("--zone-wait-us", given["--zone-wait-us"], 0, 1000000));
  }
  if ((has("--leap-history") || has("--leap-max-prefetch")) && o.mode != Mode::kLeap) {
    usage_error("--leap-history and --leap-max-prefetch apply to --mode leap only");
  }
  if (has("--log-level")) {
    static const std::map<std::string, LogLevel> levels = {
        {"debug", LogLevel::kDebug}, {"info", LogLevel::kInfo}, {"warn", LogLevel::kWarn}, {"error", LogLevel::kError}};
    const auto l = levels.find(given["--log-level"]);
    if (l == levels.end()) usage_error("--log-level: must be debug, info, warn or error, got \"" + given["--log-level"] + "\"");
    o.log_level = l->second;
  }
  o.replace = has("--replace");
  if (o.mode == Mode::kLocal) {
    for (const char* f : {"--cache-records", "--cache-percent", "--slots", "--region-bytes", "--replace"}) {
      if (has(f)) usage_error(std::string(f) + ": not used with --mode local (every record is in local memory)");
    }
  }

  // Remote memory: which way each mode reaches it.
  if (o.direct()) {
    if (!has("--memservers")) usage_error(std::string("--memservers is required with --mode ") + mode_name(o.mode));
    o.memservers = given["--memservers"];
    if (!parse_endpoint_list(o.memservers)) {
      usage_error("--memservers: expected host:port[,host:port...] with ports from 1 to 65535, got \"" + o.memservers + "\"");
    }
    const char* token = std::getenv("PD3_TOKEN");
    if (token == nullptr || *token == '\0') {
      usage_error(std::string("the memory servers' token must be in the environment variable PD3_TOKEN (--mode ") +
                  mode_name(o.mode) + ")");
    }
    o.token = token;
    if (o.token.size() > 256) usage_error("PD3_TOKEN: longer than 256 bytes");
  } else if (has("--memservers")) {
    usage_error(std::string("--memservers: not used with --mode ") + mode_name(o.mode) +
                (o.mode == Mode::kLocal ? " (nothing is remote)" : " (remote memory is reached through the agent)"));
  }
  if (o.mode == Mode::kLocal && has("--segment")) usage_error("--segment: not used with --mode local");
  if (o.through_agent() && !has("--segment")) {
    usage_error(std::string("--segment is required with --mode ") + mode_name(o.mode) + " (the agent attaches to it)");
  }
  if (has("--segment")) {
    o.segment = given["--segment"];
    if (!valid_segment_name(o.segment)) {
      usage_error("--segment: 1 to 200 characters of A-Z a-z 0-9 . _ -, got \"" + o.segment + "\"");
    }
  } else if (o.direct()) {
    o.segment = "pd3-hashmap-" + std::to_string(getpid());
  }
  return o;
}

}  // namespace pd3::hashmap
