/* pd3/binproto.h — the length-prefixed binary request format of the example apps (the C++ hash
 * map speaks it over TCP), defined once. One request:
 *
 *   pd3_bin_header | count entries
 *   entry (GET, DEL): u16 key_len | key
 *   entry (PUT):      u16 key_len | key | u32 value_len | value
 *
 * `length` counts every byte after the length field itself. `magic` lets a parser that lost sync
 * (a gap in the captured stream) find the next request boundary without guessing keys.
 */
#ifndef PD3_BINPROTO_H
#define PD3_BINPROTO_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PD3_BIN_MAGIC 0xD3u
#define PD3_BIN_GET 1u /* read `count` keys */
#define PD3_BIN_PUT 2u /* write `count` key/value pairs */
#define PD3_BIN_DEL 3u /* delete `count` keys */
#define PD3_BIN_MAX_REQUEST (16u << 20) /* largest `length` a parser accepts */

#pragma pack(push, 1)
/* Header of one binary request. */
typedef struct pd3_bin_header {
  uint32_t length; /* bytes after this field: 4 + the entries */
  uint8_t magic;   /* PD3_BIN_MAGIC */
  uint8_t op;      /* PD3_BIN_* */
  uint16_t count;  /* entries that follow */
} pd3_bin_header;
#pragma pack(pop)

#ifdef __cplusplus
}
#endif

#endif /* PD3_BINPROTO_H */
