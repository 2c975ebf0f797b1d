/* pd3/parser.h — the parser plug-in ABI (docs/architecture.md §6, paper §5.1).
 *
 * A parser tells the agent which keys a client request will touch (parse_request), and tells the
 * memory server and the Transfer Engine which keys a data record holds (parse_record). Built-in
 * parsers (RESP, the binary request format) implement this ABI natively; a user's parser is a
 * shared library exporting PD3_PARSER_ENTRY, or a TS module with the same contract (pd3/parsers).
 *
 * Every function is pure apart from its flow state and total: any bytes give accesses or nothing,
 * never a read outside the buffer handed in, never a crash, never a guessed key.
 */
#ifndef PD3_PARSER_H
#define PD3_PARSER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PD3_PARSER_ABI_VERSION 1u

/* What a request does to a key. Read-modify-write (INCR, APPEND, ...) is READ: the host reads the
 * current value first, so prefetching it helps. */
#define PD3_ACCESS_READ 1u
#define PD3_ACCESS_WRITE 2u
#define PD3_ACCESS_DELETE 3u

/* Smallest `max` a caller passes to parse_request: a parser may rely on it to emit the keys of
 * one ordinary request in one call. */
#define PD3_PARSER_MIN_ACCESSES 64u

/* One key a request touches. `key` points into the bytes handed to parse_request, or into memory
 * owned by the flow (valid until the next call on that flow). */
typedef struct pd3_access {
  const uint8_t* key;
  uint32_t key_len;
  uint32_t op; /* PD3_ACCESS_* */
} pd3_access;

/* One key inside a data record: offsets relative to the buffer handed to parse_record. One key per
 * record: [record_off, record_off + record_len) is the record holding this key, and parse_record
 * handed bytes that start at record_off must report this key first, at offset 0 (the memory server
 * verifies a PREFETCH by re-parsing the record at the address it indexed). Every answer keeps:
 * the record inside the buffer, the key and the value inside the record, 1 <= key_len <=
 * PD3_MAX_KEY_LEN, and the records of one call in buffer order without overlapping. Callers check
 * this and refuse a whole answer that breaks it.
 *
 * Layout (48 bytes, 8-byte aligned, no implicit padding; parser ABI version 1):
 *   0 key_off | 8 value_off | 16 value_len | 24 key_len | 28 reserved | 32 record_off | 40 record_len */
typedef struct pd3_record_key {
  uint64_t key_off;
  uint64_t value_off; /* the record's data, what a prefetch returns */
  uint64_t value_len;
  uint32_t key_len;
  uint32_t reserved;   /* 0 */
  uint64_t record_off; /* the record's first byte */
  uint64_t record_len; /* the record's bytes, key and value included */
} pd3_record_key;

/* A parser. All function pointers but flow_open/flow_close/parse_record are required. */
typedef struct pd3_parser {
  uint32_t abi_version; /* PD3_PARSER_ABI_VERSION */
  uint32_t reserved;
  const char* name;     /* e.g. "resp" */

  /* Per-connection state (HPACK tables, a partial message...). NULL: the parser is stateless and
   * receives flow == NULL. flow_open returns NULL on allocation failure (the flow then goes
   * without prefetching). `self` is this table: a parser whose table is embedded in a larger
   * struct finds its own context from it (the agent's bridge to TS parsers does). */
  void* (*flow_open)(const struct pd3_parser* self);
  void (*flow_close)(void* flow);

  /* Parses whole requests from the start of buf[0, len) of one flow's byte stream, in order.
   * Appends at most `max` accesses to `out` and sets *n to how many; sets *consumed to the bytes of
   * the requests it finished (0 when the first request is still incomplete: call again with more
   * bytes). A request with more keys than fit is cut (its remaining keys are not prefetched) but
   * still consumed. Returns 0, or a negative pd3_status (PD3_E_PROTOCOL) when the bytes at the start
   * are not a request of this protocol: the flow has lost sync, see resync. */
  int (*parse_request)(void* flow, const uint8_t* buf, size_t len, pd3_access* out, uint32_t max, uint32_t* n,
                       size_t* consumed);

  /* After a gap in the stream or a protocol error: the offset in buf[0, len) of the first place a
   * request plausibly starts, or -1 if there is none yet (the caller drops the bytes and waits).
   * Never guesses keys: parse_request runs from the returned offset. After parse_request failed
   * at offset 0, call resync(buf + 1, len - 1): resync looks at the start of a request only, so it
   * may well find the same unparseable bytes plausible again. */
  int64_t (*resync)(void* flow, const uint8_t* buf, size_t len);

  /* The keys inside a data record written to or read from remote memory (parseRecord): appends at
   * most `max` to `out`, sets *n. Returns 0 or a negative pd3_status. NULL: records hold no keys
   * this parser knows (the memory server then uses the built-in format of pd3/record.h). */
  int (*parse_record)(const uint8_t* buf, size_t len, pd3_record_key* out, uint32_t max, uint32_t* n);
} pd3_parser;

/* The symbol a parser library exports: `const pd3_parser* pd3_parser_entry(void);` */
#define PD3_PARSER_ENTRY "pd3_parser_entry"
typedef const pd3_parser* (*pd3_parser_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* PD3_PARSER_H */
