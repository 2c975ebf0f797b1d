/* pd3/transport.h — the agent/host ↔ memory server protocol over a byte stream (TCP here, RDMA on a
 * DPU), defined once (little-endian).
 *
 * A connection carries frames. The client opens with a HELLO frame (protocol version and auth
 * token); the server answers with a HELLO_REPLY and, if the status is ok, serves REQUEST frames
 * in order, answering each with exactly one RESPONSE frame holding one response record per request
 * record, in the same order, with the same batch sequence number. A server that cannot make sense
 * of a frame (bad length, kind, record framing) closes the connection after logging why; a request
 * record it understands but cannot execute (unknown region, out-of-range offset, unknown op) gets a
 * response record with that status.
 *
 * Records inside frames are packed back to back, without padding:
 *   request  READ / WRITE / CONTROL: pd3_request (16 B), then `size` bytes of data for a WRITE
 *   request  PREFETCH:               pd3_prefetch_request (8 B), then the key
 *   response READ / WRITE / CONTROL: pd3_response (8 B), then pd3_response_data_len() bytes
 *   response PREFETCH:               pd3_prefetch_response (16 B), then the key, then `size` bytes
 * so a host request record taken from the request ring is already a transport record, and a
 * transport response record is already a response-ring record (paper §6.1, zero-copy execution).
 *
 * Region ids are global: the top PD3_REGION_SERVER_BITS name the memory server (its configured
 * server id), the rest its local region number, so anyone holding a region id knows where it lives
 * without a directory (the agent and the host's direct mode route by it).
 */
#ifndef PD3_TRANSPORT_H
#define PD3_TRANSPORT_H

#include <stdint.h>

#include "pd3/wire.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PD3_TRANSPORT_MAGIC 0x54334450u /* "PD3T", little-endian */
/* 2: 32-bit region ids (16-byte pd3_request, 8-byte pd3_alloc_reply). 3: hello flags. */
#define PD3_TRANSPORT_VERSION 3u

/* Frame kinds. */
#define PD3_FRAME_HELLO 1u       /* client → server: pd3_hello + token */
#define PD3_FRAME_HELLO_REPLY 2u /* server → client: pd3_hello_reply */
#define PD3_FRAME_REQUEST 3u     /* client → server: `count` request records */
#define PD3_FRAME_RESPONSE 4u    /* server → client: `count` response records */

#define PD3_FRAME_MAX_DEFAULT (16u << 20) /* largest frame either side accepts unless configured */
#define PD3_FRAME_MAX_LIMIT (1u << 30)    /* no configuration may exceed this */
#define PD3_TOKEN_MAX 256u                /* auth token bytes */
#define PD3_TENANT_MAX 64u                /* tenant name bytes: [A-Za-z0-9._-], empty = the default tenant */

/* Global region ids: server:16 | local:16 in a uint32_t. Local 0 is never allocated, so region 0 is
 * never valid. 16-bit server ids name up to 65,536 memory servers (pd3_hello_reply.server_id and
 * pd3_prefetch_hint.server carry one), each with up to 65,535 regions. */
#define PD3_REGION_SERVER_BITS 16u
#define PD3_REGION_LOCAL_BITS 16u
#define PD3_MAX_SERVERS (1u << PD3_REGION_SERVER_BITS)
#define PD3_REGION_LOCAL_MAX ((1u << PD3_REGION_LOCAL_BITS) - 1u)
static inline uint32_t pd3_region_server(uint32_t region) { return region >> PD3_REGION_LOCAL_BITS; }
static inline uint32_t pd3_region_local(uint32_t region) { return region & PD3_REGION_LOCAL_MAX; }
static inline uint32_t pd3_region_id(uint32_t server, uint32_t local) {
  return ((server & (PD3_MAX_SERVERS - 1u)) << PD3_REGION_LOCAL_BITS) | (local & PD3_REGION_LOCAL_MAX);
}

#pragma pack(push, 1)
/* Header of every frame. */
typedef struct pd3_frame {
  uint32_t length; /* bytes of the whole frame, this header included */
  uint16_t kind;   /* PD3_FRAME_* */
  uint16_t flags;  /* 0 */
  uint32_t count;  /* records that follow (0 for HELLO / HELLO_REPLY) */
  uint32_t reserved;
  uint64_t seq;    /* batch sequence number; a RESPONSE repeats its REQUEST's */
} pd3_frame;

/* Body of a HELLO frame; `token_len` bytes of token, then `tenant_len` bytes of tenant name follow.
 * The connection acts for that tenant: it reaches only the tenant's regions and keys. With an
 * empty tenant the token is the cluster token; with a tenant it is the tenant's credential, the
 * lowercase hex of HMAC-SHA-256(cluster token, PD3_TENANT_CREDENTIAL_CONTEXT + tenant)
 * (docs/pool.md, "Tenants and credentials"). */
typedef struct pd3_hello {
  uint32_t magic;      /* PD3_TRANSPORT_MAGIC */
  uint16_t version;    /* PD3_TRANSPORT_VERSION */
  uint16_t token_len;  /* ≤ PD3_TOKEN_MAX */
  uint16_t tenant_len; /* ≤ PD3_TENANT_MAX */
  uint16_t flags;      /* PD3_HELLO_* the client asks for; a server refuses unknown ones */
} pd3_hello;

/* pd3_hello.flags. PD3_HELLO_ANY_ORDER: the client matches response frames to its request frames
 * by seq, so the server may send a frame's response before an earlier frame's. Frames still run in
 * the order sent; only a response waiting for durability (the SSD tier's group commit) lets later
 * ones overtake it, and never one that read what it wrote. Without it, responses come in order. */
#define PD3_HELLO_ANY_ORDER 1u
#define PD3_HELLO_FLAGS_KNOWN PD3_HELLO_ANY_ORDER

/* Body of a HELLO_REPLY frame. */
typedef struct pd3_hello_reply {
  uint32_t magic;      /* PD3_TRANSPORT_MAGIC */
  uint16_t version;    /* the server's PD3_TRANSPORT_VERSION */
  uint16_t status;     /* magnitude of a pd3_status: 0, PD3_E_AUTH or PD3_E_BAD_VERSION */
  uint16_t server_id;  /* this server's id: the top bits of every region id it hands out */
  uint16_t flags;      /* the hello's flags the server honours (all it was asked for) */
  uint32_t max_frame;  /* largest frame the server accepts */
  uint64_t capacity;   /* bytes the server offers in total */
  uint64_t free_bytes; /* bytes not allocated to regions at the time of the hello */
} pd3_hello_reply;
#pragma pack(pop)

/* What a tenant credential's HMAC is computed over, before the tenant name. */
#define PD3_TENANT_CREDENTIAL_CONTEXT "pd3 tenant credential v1:"
#define PD3_TENANT_CREDENTIAL_LEN 64u /* hex characters of an HMAC-SHA-256 */

#ifdef __cplusplus
}
#endif

#endif /* PD3_TRANSPORT_H */
