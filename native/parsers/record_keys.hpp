// record_keys.hpp — parseRecord for the built-in data record format of pd3/record.h, shared by
// every built-in parser (the example apps store their data this way whatever their protocol).
#pragma once

#include <cstddef>
#include <cstdint>

#include "pd3/parser.h"

namespace pd3 {

// The pd3_record_key of each record in buf[0, len), in order, up to `max` (*n = how many). Stops at
// the end marker or at the first incomplete or malformed record (pd3_kv_next's rules). When *n ==
// max there may be more: parse again from the last record's value_off + value_len. Returns PD3_OK.
int parse_kv_records(const uint8_t* buf, size_t len, pd3_record_key* out, uint32_t max, uint32_t* n);

}  // namespace pd3
