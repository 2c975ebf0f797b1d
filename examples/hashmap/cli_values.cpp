// cli_values.cpp — strict value parsers: anything not exactly of the expected form is refused.
#include "cli_values.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "pd3/host.h"

namespace pd3::hashmap {

bool parse_whole(const std::string& s, uint64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t n = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + uint64_t(c - '0');
  }
  *out = n;
  return true;
}

bool parse_decimal(const std::string& s, double* out) {
  if (s.empty() || s.find_first_not_of("0123456789.") != std::string::npos) return false;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool parse_size(const std::string& s, uint64_t* out) {
  if (s.empty()) return false;
  uint64_t unit = 1;
  std::string digits = s;
  switch (s.back()) {
    case 'K': case 'k': unit = 1ull << 10; break;
    case 'M': case 'm': unit = 1ull << 20; break;
    case 'G': case 'g': unit = 1ull << 30; break;
    default: break;
  }
  if (unit != 1) digits.pop_back();
  uint64_t n;
  if (!parse_whole(digits, &n) || n > (UINT64_MAX / unit)) return false;
  *out = n * unit;
  return true;
}

bool parse_endpoint(const std::string& s, bool allow_zero, std::string* host, uint16_t* port) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  uint64_t p;
  if (!parse_whole(s.substr(colon + 1), &p) || p > 65535 || (p == 0 && !allow_zero)) return false;
  *host = s.substr(0, colon);
  *port = uint16_t(p);
  return true;
}

bool parse_endpoint_list(const std::string& s) {
  size_t start = 0;
  for (;;) {
    const size_t comma = s.find(',', start);
    std::string host;
    uint16_t port;
    if (!parse_endpoint(s.substr(start, comma - start), false, &host, &port)) return false;
    if (comma == std::string::npos) return true;
    start = comma + 1;
  }
}

bool valid_segment_name(const std::string& s) {
  if (s.empty() || s.size() > PD3_NAME_MAX) return false;
  for (const char c : s) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

uint64_t whole_in_range(const std::string& flag, const std::string& v, uint64_t lo, uint64_t hi, UsageError fail) {
  uint64_t n = 0;
  if (!parse_whole(v, &n)) fail(flag + ": must be a whole number, got \"" + v + "\"");
  if (n < lo || n > hi) fail(flag + ": must be from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " + v);
  return n;
}

std::map<std::string, std::string> gather_flags(int argc, char** argv, const std::set<std::string>& switches,
                                                const std::set<std::string>& flags, const char* usage, UsageError fail) {
  std::map<std::string, std::string> given;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help") {
      std::fputs(usage, stdout);
      std::exit(0);
    }
    if (switches.count(flag) == 0 && flags.count(flag) == 0) {
      fail(flag.rfind("--", 0) == 0 ? "unknown flag " + flag : "unexpected argument \"" + flag + "\"");
    }
    if (given.count(flag) != 0) fail(flag + ": given twice");
    if (switches.count(flag) != 0) {
      given[flag] = "";
      continue;
    }
    if (i + 1 >= argc) fail(flag + ": needs a value");
    given[flag] = argv[++i];
  }
  return given;
}

}  // namespace pd3::hashmap
