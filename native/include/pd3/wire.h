/* pd3/wire.h — every record that crosses the host↔agent segment, defined once (little-endian).
 *
 * Rings carry records inside "slots": a 16-byte framing header (pd3_slot) followed by one record, or
 * by a batch of records that were published together (PD3_SLOT_RECORDS).
 * Records follow the PD3 paper (§6.1, §6.2) with the deviations documented in docs/wire-formats.md:
 * responses carry a status, keys are variable-length, the request header is 16 bytes instead of 12
 * (32-bit region ids, see pd3/transport.h), and the Loading Zone keeps each item's
 * PRODUCED/CONSUMED state in a separate descriptor word (pd3_lz_desc) so that the consumers' CAS never
 * lands on bytes the producer may reuse for another item.
 */
#ifndef PD3_WIRE_H
#define PD3_WIRE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- op:2 + id:14 ------------------------------------------------------------------------------ */

#define PD3_OP_READ 0u     /* read `size` bytes at region:offset */
#define PD3_OP_WRITE 1u    /* write `size` bytes that follow the header at region:offset (a flush) */
#define PD3_OP_PREFETCH 2u /* fetch the item of a key into the Loading Zone (agent → memory server) */
#define PD3_OP_CONTROL 3u  /* allocate / deallocate / stats; the sub-op is in `region` */

#define PD3_ID_BITS 14u
#define PD3_ID_MASK 0x3FFFu
#define PD3_MAX_INFLIGHT 16384u /* 2^14 request ids */

/* Pack and unpack the first 16-bit word of every record. */
static inline uint16_t pd3_op_id(uint32_t op, uint32_t id) {
  return (uint16_t)(((op & 3u) << PD3_ID_BITS) | (id & PD3_ID_MASK));
}
static inline uint32_t pd3_op_of(uint16_t op_id) { return (uint32_t)op_id >> PD3_ID_BITS; }
static inline uint32_t pd3_id_of(uint16_t op_id) { return (uint32_t)op_id & PD3_ID_MASK; }

/* CONTROL sub-operations, carried in pd3_request.region. */
#define PD3_CTL_ALLOCATE 1u   /* size = bytes wanted; response data = pd3_alloc_reply */
#define PD3_CTL_DEALLOCATE 2u /* offset = region id to release (a full 32-bit region id) */
#define PD3_CTL_STATS 3u      /* response data = implementation-defined text */
/* Hot-region migration (docs/pool.md, "Moving hot regions"); offset = the region id, owner only.
 * A region's move state goes NONE → FROZEN → SEALED, and back to NONE by THAW before the pool's
 * name record is switched; a SEALED region whose name was switched stays SEALED until freed. */
#define PD3_CTL_FREEZE 4u /* NONE/FROZEN → FROZEN: WRITEs answer PD3_E_MOVED, READs still served.
                             PD3_E_MOVED if SEALED */
#define PD3_CTL_SEAL 5u   /* FROZEN/SEALED → SEALED: every READ, WRITE and PREFETCH hit answers
                             PD3_E_MOVED (prefetches miss). PD3_E_INVAL if NONE (never sealed unfrozen) */
#define PD3_CTL_THAW 6u   /* FROZEN/SEALED → NONE: serves as before (a move given up). PD3_E_INVAL if NONE.
                             With size = PD3_THAW_IF_FROZEN a SEALED region answers PD3_E_MOVED and
                             stays sealed (a server thawing a move it finds stuck, which must never
                             reopen a region whose name may already name its copy) */
#define PD3_THAW_IF_FROZEN 1u

/* ---- ring slot framing ------------------------------------------------------------------------- */

#define PD3_SLOT_RECORD 1u  /* the slot holds one record */
#define PD3_SLOT_PAD 2u     /* filler to the end of the ring; the next slot starts at offset 0 */
#define PD3_SLOT_RECORDS 3u /* the slot holds `count` (≥ 1) records back to back, each starting on a
                               PD3_RECORD_ALIGN boundary: one header and one seal for a batch */
#define PD3_SLOT_ALIGN 16u  /* every slot starts and ends on a 16-byte boundary, so a PAD always fits a header */
#define PD3_RECORD_ALIGN 8u /* records in a PD3_SLOT_RECORDS slot start on 8-byte boundaries */
#define PD3_SLOT_MAX_RECORDS 65535u /* most records one PD3_SLOT_RECORDS slot holds (`count` is 16 bits) */

/* Framing of one record in a byte ring (request and response rings). */
typedef struct pd3_slot {
  uint64_t seal;   /* (position ^ seal_salt) | 1 once published, where position is the slot's monotonic
                      byte position; anything else: not yet. The per-segment salt keeps stale payload
                      bytes of an earlier lap from passing for a seal. */
  uint32_t length; /* bytes of the whole slot including this header, a multiple of PD3_SLOT_ALIGN */
  uint16_t kind;   /* PD3_SLOT_RECORD, PD3_SLOT_RECORDS or PD3_SLOT_PAD */
  uint16_t count;  /* PD3_SLOT_RECORDS: the records in the slot. Their lengths come from their own
                      headers (pd3_request_payload_len, pd3_response_data_len); the last one ends in
                      the slot's final PD3_SLOT_ALIGN bytes. Other kinds: 0 */
} pd3_slot;

/* ---- host request (paper §6.1, widened to 16 bytes; write data follows) ------------------------ */

#pragma pack(push, 1)
/* A remote-memory request from the host: the paper's 12-byte header with the region id widened to
 * 32 bits (server:16 | local:16), which puts 2 reserved bytes after op_id so every field stays
 * naturally aligned. Packed only so no compiler may pad it: the layout is already aligned. */
typedef struct pd3_request {
  uint16_t op_id;    /* op:2 + id:14 */
  uint16_t reserved; /* 0; a request carrying anything else is refused with PD3_E_PROTOCOL */
  uint32_t region;   /* region id, or the CONTROL sub-op */
  uint32_t offset;   /* byte offset in the region; DEALLOCATE: the region id */
  uint32_t size;     /* bytes to read or write; for WRITE the data follows */
} pd3_request;
#pragma pack(pop)

/* A request header with `reserved` = 0. Build headers with it rather than with a positional
 * initialiser, which would put the region into `reserved` (the field order of the 12-byte header). */
static inline pd3_request pd3_make_request(uint16_t op_id, uint32_t region, uint32_t offset, uint32_t size) {
  pd3_request r;
  r.op_id = op_id;
  r.reserved = 0;
  r.region = region;
  r.offset = offset;
  r.size = size;
  return r;
}

/* ---- host response (paper §6.1 plus a status) -------------------------------------------------- */

/* The answer to one pd3_request; read data follows. */
typedef struct pd3_response {
  uint16_t op_id;  /* carried over from the request */
  uint16_t status; /* magnitude of a pd3_status: 0 = ok */
  uint32_t size;   /* bytes accessed; for READ the data follows */
} pd3_response;

/* Bytes that follow a request header: write data, or the key of a host-issued PREFETCH. */
static inline uint32_t pd3_request_payload_len(const pd3_request* r) {
  const uint32_t op = pd3_op_of(r->op_id);
  return (op == PD3_OP_WRITE || op == PD3_OP_PREFETCH) ? r->size : 0u;
}

/* Bytes that follow a response header, only when status is ok: read data, a CONTROL reply, or a
 * prefetch hint (pd3_prefetch_hint + key). */
static inline uint32_t pd3_response_data_len(const pd3_response* r) {
  const uint32_t op = pd3_op_of(r->op_id);
  return (r->status == 0 && (op == PD3_OP_READ || op == PD3_OP_CONTROL || op == PD3_OP_PREFETCH)) ? r->size : 0u;
}

/* Data of a successful PD3_CTL_ALLOCATE response. */
typedef struct pd3_alloc_reply {
  uint32_t region;   /* the new region's id */
  uint32_t capacity; /* bytes in the region */
} pd3_alloc_reply;

/* ---- prefetch (paper §6.2, variable-length keys) ----------------------------------------------- */

#pragma pack(push, 1)
/* Agent → memory server: fetch the item stored under a key. The key follows. */
typedef struct pd3_prefetch_request {
  uint16_t op_id;    /* op = PD3_OP_PREFETCH */
  uint16_t key_len;  /* bytes of key that follow (≥ 1) */
  uint32_t max_size; /* most data bytes the requester reserved for the answer: a larger item is
                        answered with PD3_E_DEST_SMALL and its size, without data */
} pd3_prefetch_request;
#pragma pack(pop)

/* Agent → host, only when the agent issues its prefetches through the host (pd3-agent
 * --prefetch-issuer host, the paper's §6.2 comparison path): a response-ring record whose
 * pd3_response has op PD3_OP_PREFETCH (the id is the agent's prefetch id, not a host request id),
 * status 0 and size = sizeof(pd3_prefetch_hint) + key_len; this struct, then the key, follow.
 * The host answers with a request-ring record pd3_request{op_id as received, reserved = 0,
 * region = server, offset = max_size, size = key_len} + key, and gets no completion for it: the agent puts the
 * answer into the Loading Zone as it does for its own prefetches. */
typedef struct pd3_prefetch_hint {
  uint16_t server;   /* the memory server id to ask */
  uint16_t key_len;  /* bytes of key that follow (≥ 1) */
  uint32_t max_size; /* as pd3_prefetch_request.max_size */
} pd3_prefetch_hint;

/* Memory server → agent: the item of a key, or a status (PD3_E_NOT_FOUND). Key, then data follow. */
typedef struct pd3_prefetch_response {
  uint16_t op_id;
  uint16_t status;  /* magnitude of a pd3_status */
  uint32_t size;    /* bytes of data after the key */
  uint16_t key_len;
  uint16_t reserved[3];
} pd3_prefetch_response;

/* ---- Loading Zone ------------------------------------------------------------------------------ */

/* Item states, kept in the low 2 bits of pd3_lz_desc.state; the upper 62 bits hold the item's seq. */
#define PD3_LZ_FREE 0u     /* slot not holding a live item (never produced, or reclaimed) */
#define PD3_LZ_PRODUCED 1u /* published by the agent, not yet taken */
#define PD3_LZ_CONSUMED 2u /* taken by exactly one checkAndReturn */
#define PD3_LZ_INVALID 3u  /* withdrawn by the agent (the key was written or deleted since) */
#define PD3_LZ_STATE_BITS 2u
#define PD3_LZ_STATE_MASK 3u

/* Header of one item in the Loading Zone's data ring; key (padded to 8) then data (padded) follow. */
typedef struct pd3_lz_record {
  uint64_t seq;     /* the item's sequence number: identifies it against its descriptor */
  uint16_t op_id;   /* carried over from the prefetch request */
  uint16_t key_len; /* bytes of key */
  uint32_t size;    /* bytes of data (< 2^31, as the paper's size:31) */
} pd3_lz_record;

/* Per-item descriptor, indexed by seq % desc_count. Consumers only ever CAS `state`. */
typedef struct pd3_lz_desc {
  uint64_t state;      /* (seq << 2) | PD3_LZ_*: the linearisation point of checkAndReturn */
  uint64_t next_seq;   /* seq of the next-older item in the same index bucket; 0 = end of chain */
  uint64_t data_pos;   /* monotonic byte position of the pd3_lz_record in the data ring */
  uint32_t key_hash;   /* pd3_lz_key_hash(key) */
  uint32_t record_len; /* bytes the record occupies in the data ring, padded to 8 */
} pd3_lz_desc;

/* Round up to the 8-byte alignment every record part keeps. */
static inline uint64_t pd3_align8(uint64_t n) { return (n + 7u) & ~(uint64_t)7u; }

/* Bytes one Loading Zone item occupies in the data ring. */
static inline uint64_t pd3_lz_record_len(uint32_t key_len, uint32_t size) {
  return sizeof(pd3_lz_record) + pd3_align8(key_len) + pd3_align8(size);
}

/* The Loading Zone index hash: 32-bit, computed with 32-bit operations only so that a pure-TS
 * checkAndReturn can compute it without BigInt (a murmur3-style word mix). test/wire.test.ts checks
 * the TS port against this definition. */
static inline uint32_t pd3_rotl32(uint32_t x, unsigned r) { return (x << r) | (x >> (32u - r)); }
static inline uint32_t pd3_lz_key_hash(const void* key, uint32_t len) {
  const uint8_t* p = (const uint8_t*)key;
  uint32_t h = 0x9E3779B9u ^ len;
  uint32_t i = 0;
  for (; i + 4u <= len; i += 4u) {
    uint32_t w = (uint32_t)p[i] | ((uint32_t)p[i + 1] << 8) | ((uint32_t)p[i + 2] << 16) |
                 ((uint32_t)p[i + 3] << 24);
    w *= 0xCC9E2D51u;
    w = pd3_rotl32(w, 15);
    w *= 0x1B873593u;
    h ^= w;
    h = pd3_rotl32(h, 13);
    h = h * 5u + 0xE6546B64u;
  }
  uint32_t t = 0;
  for (uint32_t s = 0; i < len; ++i, s += 8u) t |= (uint32_t)p[i] << s;
  t *= 0xCC9E2D51u;
  t = pd3_rotl32(t, 15);
  t *= 0x1B873593u;
  h ^= t;
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return h;
}

#define PD3_MAX_KEY_LEN 65535u       /* key_len is 16 bits */
#define PD3_MAX_ITEM_SIZE 0x7FFFFFFFu /* size:31 */

#ifdef __cplusplus
}
#endif

#endif /* PD3_WIRE_H */
