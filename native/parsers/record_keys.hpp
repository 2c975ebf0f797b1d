// record_keys.hpp — pd3_record_key (pd3/parser.h): the built-in record format's keys (parseRecord
// for pd3/record.h, shared by every built-in parser: the example apps store their data this way
// whatever their protocol), and the rules every parse_record answer must keep, in one place.
#pragma once

#include <cstddef>
#include <cstdint>

#include "pd3/parser.h"
#include "pd3/record.h"

namespace pd3 {

// The pd3_record_key of one pd3/record.h record found by pd3_kv_next.
inline pd3_record_key record_key_of(const pd3_kv_entry& e) {
  return pd3_record_key{e.key_off, e.value_off, e.value_len, e.key_len, 0, e.record_off, e.record_len};
}

// The pd3_record_key of each record in buf[0, len), in order, up to `max` (*n = how many). Stops at
// the end marker or at the first incomplete or malformed record (pd3_kv_next's rules). When *n ==
// max there may be more: parse again from the last record's record_off + record_len. Returns PD3_OK.
int parse_kv_records(const uint8_t* buf, size_t len, pd3_record_key* out, uint32_t max, uint32_t* n);

// Why `k`, from an answer of parse_record over a buffer of `len` bytes, breaks pd3/parser.h's rules
// (a record outside the buffer, a key or value outside its record, key_len 0 or above
// PD3_MAX_KEY_LEN), or nullptr if it keeps them. Checked in 64-bit arithmetic without overflow, so
// any values a plug-in returns are safe to check. `prev_end` is where the previous key's record of
// the same answer ended (0 for the first): a record starting before it is out of order.
const char* record_key_defect(const pd3_record_key& k, size_t len, uint64_t prev_end);

}  // namespace pd3
