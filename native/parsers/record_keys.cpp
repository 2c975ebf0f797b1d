// record_keys.cpp — pd3/record.h records → pd3_record_key through pd3_kv_next (one definition of the
// format's rules), and the checks on a parse_record answer.
#include "parsers/record_keys.hpp"

#include <cstddef>

#include "pd3/status.h"

namespace pd3 {

// The layout pd3/parser.h documents: plug-ins compiled against it must agree with this build.
static_assert(sizeof(pd3_record_key) == 48 && alignof(pd3_record_key) == 8, "pd3_record_key is 48 bytes");
static_assert(offsetof(pd3_record_key, key_len) == 24 && offsetof(pd3_record_key, record_off) == 32 &&
                  offsetof(pd3_record_key, record_len) == 40,
              "pd3_record_key's documented field offsets");

namespace {

// True if [off, off + n) lies inside [lo, hi), without overflow for any off and n (lo <= hi).
bool inside(uint64_t off, uint64_t n, uint64_t lo, uint64_t hi) { return off >= lo && off <= hi && n <= hi - off; }

}  // namespace

int parse_kv_records(const uint8_t* buf, size_t len, pd3_record_key* out, uint32_t max, uint32_t* n) {
  uint32_t found = 0;
  uint64_t pos = 0;
  pd3_kv_entry e;
  while (found < max && pd3_kv_next(buf, len, &pos, &e)) out[found++] = record_key_of(e);
  *n = found;
  return PD3_OK;
}

const char* record_key_defect(const pd3_record_key& k, size_t len, uint64_t prev_end) {
  if (k.key_len == 0 || k.key_len > PD3_MAX_KEY_LEN) return "a key length of 0 or above PD3_MAX_KEY_LEN";
  if (!inside(k.record_off, k.record_len, 0, len)) return "a record outside the buffer";
  if (k.record_off < prev_end) return "records out of order or overlapping";
  const uint64_t record_end = k.record_off + k.record_len;
  if (!inside(k.key_off, k.key_len, k.record_off, record_end)) return "a key outside its record";
  if (!inside(k.value_off, k.value_len, k.record_off, record_end)) return "a value outside its record";
  return nullptr;
}

}  // namespace pd3
