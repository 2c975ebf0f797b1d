// resp_parser.hpp — the built-in RESP parser ("resp"): Redis requests (arrays of bulk strings and
// inline commands) → the keys they touch. Stateless (flow_open is NULL).
#pragma once

#include "pd3/parser.h"

namespace pd3 {

// Redis' own limits, so the parser refuses what the server would.
inline constexpr uint64_t kRespMaxArgs = 1u << 20;        // elements of one array request
inline constexpr uint64_t kRespMaxBulk = 512ull << 20;    // bytes of one bulk string (proto-max-bulk-len)
inline constexpr uint64_t kRespMaxInline = 64u << 10;     // bytes of one inline command line

// The parser table (static storage, never NULL).
const pd3_parser* resp_parser();

}  // namespace pd3
