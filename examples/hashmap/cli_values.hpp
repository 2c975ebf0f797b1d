// cli_values.hpp — parsing of command-line values shared by the server and the client: whole
// numbers (digits only), decimals, sizes with K/M/G units, HOST:PORT endpoints, segment names.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace pd3::hashmap {

// Digits only, no sign, fits 64 bits.
bool parse_whole(const std::string& s, uint64_t* out);
// A finite decimal number such as 0.5 or 12.
bool parse_decimal(const std::string& s, double* out);
// Bytes: digits with an optional K, M or G unit (powers of 1024).
bool parse_size(const std::string& s, uint64_t* out);
// HOST:PORT with a non-empty host; port 0 only if allow_zero.
bool parse_endpoint(const std::string& s, bool allow_zero, std::string* host, uint16_t* port);
// host:port[,host:port...], ports 1..65535.
bool parse_endpoint_list(const std::string& s);
// 1..200 characters of [A-Za-z0-9._-] (PD3_NAME_MAX).
bool valid_segment_name(const std::string& s);

// Reports a bad command line and exits (never returns).
using UsageError = void (*)(const std::string& what);

// `flag`'s value `v` as a whole number in [lo, hi]; anything else goes to `fail`.
uint64_t whole_in_range(const std::string& flag, const std::string& v, uint64_t lo, uint64_t hi, UsageError fail);

// The command line as flag → value ("" for a switch). --help prints `usage` and exits 0; an
// unknown flag, a flag given twice or a flag without its value goes to `fail`.
std::map<std::string, std::string> gather_flags(int argc, char** argv, const std::set<std::string>& switches,
                                                const std::set<std::string>& flags, const char* usage, UsageError fail);

}  // namespace pd3::hashmap
