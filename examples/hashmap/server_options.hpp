// server_options.hpp — pd3_hashmap's command line: flags, defaults and checks. A bad command line
// prints one line naming the flag and exits 2 (as pd3-agent and pd3-memserver do).
#pragma once

#include <cstdint>
#include <string>

#include "json_line.hpp"

namespace pd3::hashmap {

// How misses reach remote memory (README.md "Modes").
enum class Mode { kLocal, kSync, kAsync, kLeap, kPd3NoPrefetch, kPd3 };

// Everything the server was asked to do.
struct ServerOptions {
  std::string listen_host = "127.0.0.1";
  uint16_t listen_port = 7600;
  Mode mode = Mode::kLocal;
  uint64_t records = 100000;
  uint64_t slots = 0;           // 0: 2 × records (at least 64)
  uint64_t cache_records = 0;   // resolved from --cache-records or --cache-percent
  uint32_t threads = 2;
  std::string segment;          // resolved: required in the pd3 modes, generated otherwise
  std::string memservers;       // sync, async, leap
  std::string token;            // from PD3_TOKEN
  uint32_t region_bytes = 64u << 20;
  uint32_t agent_wait_ms = 30000;
  bool replace = false;
  LogLevel log_level = LogLevel::kInfo;
  uint32_t leap_history = 32;   // Leap: misses remembered per worker
  uint32_t leap_max_prefetch = 8;
  uint32_t zone_wait_us = 0;    // pd3: how long a zone miss waits for the agent's prefetch first (0: no wait; README)

  bool direct() const { return mode == Mode::kSync || mode == Mode::kAsync || mode == Mode::kLeap; }
  bool through_agent() const { return mode == Mode::kPd3NoPrefetch || mode == Mode::kPd3; }
};

const char* mode_name(Mode m);

// Parses argv (and PD3_TOKEN). On --help prints the usage and exits 0; on a bad command line
// prints "pd3_hashmap: <problem>" and exits 2.
ServerOptions parse_server_options(int argc, char** argv);

}  // namespace pd3::hashmap
