/* pd3/record.h — the built-in data record format: length-prefixed key/value records, packed back to
 * back. The memory server indexes every write with it (docs/architecture.md §6 parseRecord) and the
 * Transfer Engine uses it to keep Host View right (§8). The example apps store their data this way.
 *
 *   u32 key_len | u32 value_len | key bytes | value bytes | next record ...
 *
 * A record with key_len 0 ends the sequence (fill the unused tail of a page with zeros). Parsing
 * stops at the first record that is incomplete or whose key_len exceeds PD3_MAX_KEY_LEN, so any
 * bytes parse to some prefix of records and never past the end of the buffer.
 */
#ifndef PD3_RECORD_H
#define PD3_RECORD_H

#include <stdint.h>
#include <string.h>

#include "pd3/wire.h"

#ifdef __cplusplus
extern "C" {
#endif

#pragma pack(push, 1)
/* Header of one key/value record. */
typedef struct pd3_kv_header {
  uint32_t key_len;   /* 1..PD3_MAX_KEY_LEN; 0 ends the sequence */
  uint32_t value_len; /* bytes of value after the key */
} pd3_kv_header;
#pragma pack(pop)

/* One record found by pd3_kv_next: offsets are relative to the parsed buffer. */
typedef struct pd3_kv_entry {
  uint64_t record_off; /* the pd3_kv_header */
  uint64_t key_off;
  uint32_t key_len;
  uint32_t value_len;
  uint64_t value_off;
  uint64_t record_len; /* header + key + value */
} pd3_kv_entry;

/* Parses the record at `*pos` of buf[0, len): on success fills `e`, advances *pos past it and
 * returns 1; returns 0 at the end marker, at the end of the buffer, or at an incomplete or
 * malformed record (nothing is read past buf + len). */
static inline int pd3_kv_next(const uint8_t* buf, uint64_t len, uint64_t* pos, pd3_kv_entry* e) {
  const uint64_t at = *pos;
  if (at > len || len - at < sizeof(pd3_kv_header)) return 0;
  pd3_kv_header h;
  memcpy(&h, buf + at, sizeof h);
  if (h.key_len == 0 || h.key_len > PD3_MAX_KEY_LEN) return 0;
  const uint64_t body = (uint64_t)h.key_len + h.value_len;
  if (len - at - sizeof(pd3_kv_header) < body) return 0;
  e->record_off = at;
  e->key_off = at + sizeof(pd3_kv_header);
  e->key_len = h.key_len;
  e->value_off = e->key_off + h.key_len;
  e->value_len = h.value_len;
  e->record_len = sizeof(pd3_kv_header) + body;
  *pos = at + e->record_len;
  return 1;
}

#ifdef __cplusplus
}
#endif

#endif /* PD3_RECORD_H */
