// lying_parser.hpp — the lies test/plugins/lying_parser.cpp tells in parse_record, shared with the
// tests that pick one through the library's pd3_lying_parser_set_lie().
#pragma once

namespace pd3test {

// One way a parse_record answer breaks pd3/parser.h; each is applied to an honest answer's first
// key (kOverlap to its first two).
enum class Lie : int {
  kHonest = 0,           // a correct answer
  kKeyPastRecord,        // the key runs one byte past its record (and the buffer's end)
  kRecordPastBuffer,     // record_len one byte longer than the buffer
  kValueAfterRecord,     // the value starts where its record ends
  kKeyAfterRecord,       // the key starts where its record ends
  kEmptyKey,             // key_len 0
  kOverlongKey,          // key_len PD3_MAX_KEY_LEN + 1, inside record and buffer when they are long enough
  kKeyOffsetWraps,       // key_off near 2^64: key_off + key_len wraps around
  kRecordOffsetWraps,    // record_off near 2^64: record_off + record_len wraps around
  kTooManyKeys,          // *n = max + 1 (only max keys written)
  kNegativeStatus,       // returns PD3_E_PROTOCOL
  kPositiveStatus,       // returns 1
  kOverlap,              // the second key repeats the first's record (out of order, overlapping)
  kCount,
};

// Signature of the library's exported pd3_lying_parser_set_lie.
using SetLieFn = void (*)(int lie);
inline constexpr const char* kSetLieSymbol = "pd3_lying_parser_set_lie";

}  // namespace pd3test
