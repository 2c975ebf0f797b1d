// record_keys.cpp — pd3/record.h records → pd3_record_key, through pd3_kv_next (one definition of
// the format's rules).
#include "parsers/record_keys.hpp"

#include "pd3/record.h"
#include "pd3/status.h"

namespace pd3 {

int parse_kv_records(const uint8_t* buf, size_t len, pd3_record_key* out, uint32_t max, uint32_t* n) {
  uint32_t found = 0;
  uint64_t pos = 0;
  pd3_kv_entry e;
  while (found < max && pd3_kv_next(buf, len, &pos, &e)) {
    out[found++] = pd3_record_key{e.key_off, e.value_off, e.value_len, e.key_len, 0};
  }
  *n = found;
  return PD3_OK;
}

}  // namespace pd3
