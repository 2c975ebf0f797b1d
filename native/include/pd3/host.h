/* pd3/host.h — the host library's C ABI (libpd3host): remote memory through the agent, and
 * checkAndReturn over the Loading Zone. Link with -lpd3host; no Node.js needed.
 *
 * Threading: every function may be called from any thread. Requests through the agent are
 * published lock-free into the shared request ring: each at once by default, or, with
 * pd3_host_config.publish_batch above 1, staged per handle and published together (one
 * reservation and one doorbell check per batch) at the handle's next pd3_host_poll(),
 * pd3_host_wait(), pd3_host_flush() or pd3_host_close(), or as soon as it holds publish_batch. Completions are delivered per handle: pd3_host_poll() on a handle drains
 * the response ring (one poller at a time; a concurrent caller just collects what is already queued
 * for it) and returns only the completions of requests issued through that same handle. Give each
 * thread or each event loop its own handle with pd3_host_attach().
 *
 * Return codes: PD3_OK (0) or a non-negative count/id/size on success; a negative pd3_status on error.
 * No function throws, aborts or blocks on the agent.
 */
#ifndef PD3_HOST_H
#define PD3_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "pd3/segment.h"
#include "pd3/status.h"
#include "pd3/wire.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A handle on a host segment. */
typedef struct pd3_host pd3_host;

#define PD3_HOST_REPLACE 1u     /* create: unlink an existing segment of the same name first */
#define PD3_HOST_DIRECT_ONLY 2u /* never use the agent: every request goes to the memory servers directly
                                   (the "host-issued" baseline; needs direct_servers) */
#define PD3_HOST_DIRECT_UNREGISTERED 4u /* direct mode: do not register the caller's buffers. A TCP
                                           transport (the one this build has) needs no registration;
                                           an RDMA NIC does, so the default registers them through
                                           the handle's MRRC (direct_mr_cache_bytes) */

/* What requests do while the agent's heartbeat is stale (docs/host-library.md, "When the agent dies"). */
#define PD3_FALLBACK_FAIL 0u   /* fail at once with PD3_E_AGENT_DOWN */
#define PD3_FALLBACK_DIRECT 1u /* go to the memory servers directly over the transport protocol */
/* Where direct mode places a new region (pd3_host_config.direct_placement). */
#define PD3_PLACEMENT_P2C 0u       /* of two servers drawn at random, the one with more free bytes */
#define PD3_PLACEMENT_MOST_FREE 1u /* the server with the most free bytes */
#define PD3_PLACEMENT_RANDOM 2u    /* a server drawn uniformly at random */

#define PD3_NAME_MAX 200u   /* segment names: 1..PD3_NAME_MAX chars of [A-Za-z0-9._-] */

#define PD3_DEFAULT_PUBLISH_BATCH 1u /* pd3_host_config.publish_batch when 0: each request at once */
#define PD3_MAX_PUBLISH_BATCH 4096u

/* Everything pd3_host_create needs. Zero-initialise, then set `name`.
 * The struct only grows: a field is added at its end, never in place of another, and 0 always
 * means the behaviour of a library that did not have it. */
typedef struct pd3_host_config {
  const char* name;          /* the segment is /dev/shm/<name>, mode 0600 */
  pd3_segment_sizes sizes;   /* 0 fields take the PD3_DEFAULT_* sizes */
  uint32_t agent_timeout_ms; /* heartbeat age after which the agent counts as down; 0 = default */
  uint32_t flags;            /* PD3_HOST_* */
  uint32_t fallback;         /* PD3_FALLBACK_*: what requests do while the agent is down */
  uint32_t direct_timeout_ms; /* direct mode: connect + hello deadline; 0 = 1000 */
  const char* direct_servers; /* direct mode: "host:port[,host:port...]" of every memory server */
  const char* direct_token;   /* direct mode: the memory servers' auth token */
  uint32_t direct_placement;  /* direct mode: PD3_PLACEMENT_*, where ALLOCATE goes; 0 = P2C */
  uint32_t direct_refraction_ms; /* direct mode: a server that answered PD3_E_NOSPACE gets no new
                                    region this long unless no other can take it; 0 = 1000 */
  const char* direct_tenant;  /* direct mode: the tenant this app is (NULL or "" = the default
                                 tenant); direct_token is then the tenant's credential */
  uint32_t publish_batch;     /* requests a handle stages before it publishes them without
                                 waiting for its next poll, wait or flush: to the request ring, or
                                 in direct mode to the memory servers' connections; 0 or 1 =
                                 publish each at once; at most PD3_MAX_PUBLISH_BATCH. Staging
                                 cuts the host's CPU per request (docs/host-library.md) */
  uint32_t direct_mr_cache_bytes; /* direct mode: bytes each handle's registration cache (MRRC,
                                     docs/mrrc.md) may keep pinned for read destinations and write
                                     sources; 0 = 4 MiB; capped to RLIMIT_MEMLOCK; unused
                                     with PD3_HOST_DIRECT_UNREGISTERED */
} pd3_host_config;

/* One finished request, as returned by pd3_host_poll. Its 24-byte layout is fixed for good: the
 * caller sizes the array pd3_host_poll fills, so unlike pd3_host_config it can never grow. */
typedef struct pd3_completion {
  uint64_t user_data; /* as passed when the request was issued */
  int32_t status;     /* PD3_OK or a negative pd3_status from the agent or memory server */
  uint32_t size;      /* bytes accessed (READ: bytes copied into the caller's dest) */
  uint16_t id;        /* the 14-bit request id */
  uint16_t op;        /* PD3_OP_* */
  uint32_t region;    /* ALLOCATE: the new region; otherwise the request's region */
} pd3_completion;

/* Creates and maps a new segment and returns the owning handle. `config_size` is
 * sizeof(pd3_host_config) as the caller was compiled: call pd3_host_create, which passes it.
 * A library newer than the caller's header gives the fields the caller did not know their 0
 * behaviour; a library older than the caller's header refuses a config that sets a field it does
 * not know (PD3_E_INVAL), instead of ignoring it.
 * Returns PD3_OK, PD3_E_INVAL (bad name, sizes, field or config_size), PD3_E_EXISTS (name in use,
 * no PD3_HOST_REPLACE), PD3_E_NOMEM or PD3_E_SYS. */
PD3_API int pd3_host_create_sized(const pd3_host_config* config, size_t config_size, pd3_host** out);
/* pd3_host_create_sized with this header's size of the config. */
static inline int pd3_host_create(const pd3_host_config* config, pd3_host** out) {
  return pd3_host_create_sized(config, sizeof(pd3_host_config), out);
}

/* Opens another handle on a segment. In the creating process the handle shares its in-flight table
 * and may issue requests; in any other process it may only call pd3_host_check_and_return and the
 * query functions (requests return PD3_E_NOT_OWNER). Validates the segment as the agent does.
 * Returns PD3_OK, PD3_E_INVAL, PD3_E_NOENT, PD3_E_BAD_MAGIC, PD3_E_BAD_VERSION, PD3_E_BAD_SIZE,
 * PD3_E_BAD_LAYOUT or PD3_E_SYS. */
PD3_API int pd3_host_attach(const char* name, pd3_host** out);

/* Releases a handle. Closing the creating handle unlinks the segment name; the memory stays mapped
 * until the last handle in the process is closed. Staged requests are published first (unless the
 * request ring is full). Requests still in flight on this handle are dropped: their completions
 * are discarded and read destinations are no longer written. */
PD3_API void pd3_host_close(pd3_host* host);

/* Issue requests. Each returns the request id (0..16383) or PD3_E_INFLIGHT (16384 in flight),
 * PD3_E_AGAIN (this request fills the handle's batch and the request ring has no room for all of
 * it: back-pressure, this request was not staged; poll, then retry), PD3_E_TOO_BIG (can never fit
 * the request or response ring), PD3_E_INVAL, PD3_E_NOT_OWNER or PD3_E_CLOSED.
 * While the agent is down (heartbeat older than agent_timeout_ms, or never seen): PD3_E_AGENT_DOWN
 * with PD3_FALLBACK_FAIL; with PD3_FALLBACK_DIRECT (or PD3_HOST_DIRECT_ONLY) the request goes to
 * the memory server directly and may also return PD3_E_UNAVAILABLE (server unreachable),
 * PD3_E_AUTH or PD3_E_BAD_REGION (no server has the region's server id). Direct requests are sent
 * at the next pd3_host_poll or pd3_host_wait of any handle of the segment. With publish_batch above
 * 1, a handle stages its direct requests as it does ring requests, until its batch is full or its
 * own next poll, wait, flush or close; a staged request no server can take then completes with
 * the reason above instead of returning it (the request that fills the batch still returns it).
 * pd3_host_read: `dest` must stay valid until the completion is polled. */
PD3_API int pd3_host_allocate(pd3_host* host, uint32_t bytes, uint64_t user_data);
PD3_API int pd3_host_deallocate(pd3_host* host, uint32_t region, uint64_t user_data);
PD3_API int pd3_host_read(pd3_host* host, uint32_t region, uint32_t offset, uint32_t size, void* dest,
                  uint64_t user_data);
PD3_API int pd3_host_write(pd3_host* host, uint32_t region, uint32_t offset, const void* src, uint32_t size,
                   uint64_t user_data);

/* Publishes the requests this handle has staged, for the agent or in direct mode (poll and wait do it too).
 * Returns PD3_OK, PD3_E_AGAIN (the request ring had room for only some, or none: the rest stay
 * staged), PD3_E_INVAL or PD3_E_NOT_OWNER. Requests staged while the agent went down complete with
 * PD3_E_AGENT_DOWN, or go to the memory servers directly under PD3_FALLBACK_DIRECT. */
PD3_API int pd3_host_flush(pd3_host* host);

/* Direct mode in a pool whose membership changes (docs/pool.md): tells the segment's direct path
 * that the memory server at `address` ("host:port") is a member of the pool (`member` non-zero) or
 * has left it (0). A server that left gets no new region; its regions are still read and written
 * while it answers. A member it did not know gets a connection of its own and new regions once its
 * hello succeeds; one it knew may get them again. At most 64 servers are known at once: a new one
 * then takes the place of one that left and has no connection. The TS library's
 * followPoolServers calls it for each change it sees in etcd.
 * Returns PD3_OK, PD3_E_INVAL (address not host:port, or no direct_servers were configured),
 * PD3_E_NOT_OWNER or PD3_E_NOSPACE (64 servers known, none of them left and unconnected). */
PD3_API int pd3_host_set_direct_member(pd3_host* host, const char* address, int member);

/* Publishes this handle's staged requests, then completes up to `max` of its requests. Never blocks.
 * A response whose record is malformed completes its request with status PD3_E_CORRUPT. When the
 * agent's heartbeat has stopped, requests that went through the agent and are still unanswered
 * complete with PD3_E_AGENT_DOWN (their ids stay reserved until an agent acknowledges the fence,
 * so a late answer can never complete a newer request).
 * Returns the number written to `out` (0 if none), or PD3_E_INVAL, or PD3_E_CORRUPT once the
 * response ring's framing is broken (nothing more can be taken from it; recreate the segment). */
PD3_API int pd3_host_poll(pd3_host* host, pd3_completion* out, uint32_t max);

/* Publishes this handle's staged requests, then blocks until it has completions to poll or
 * `timeout_us` passes. Direct-mode sockets wake it at once. The response ring has no doorbell: it
 * is re-checked after a sleep sized to let about half of the handle's requests in flight (at most
 * 1,024) be answered, at the rate answers have been arriving (50 us to 1 ms, never past the timeout).
 * Returns 1 if completions are waiting, 0 on timeout, or PD3_E_INVAL. */
PD3_API int pd3_host_wait(pd3_host* host, uint32_t timeout_us);

/* The Loading Zone lookup (paper §7.1): if an item with exactly this key is PRODUCED, copies its
 * data into `dest`, marks it CONSUMED and returns its size. Never blocks.
 * Returns the size (> 0) on a hit, 0 on a miss (dest contents are then unspecified), or
 * PD3_E_DEST_SMALL (the item is larger than dest_cap; it is left unconsumed) or PD3_E_INVAL. */
PD3_API int64_t pd3_host_check_and_return(pd3_host* host, const void* key, uint32_t key_len, void* dest,
                                  uint32_t dest_cap);

/* 1 if the agent's heartbeat is fresher than the configured timeout, else 0. */
PD3_API int pd3_host_agent_alive(const pd3_host* host);

/* Requests issued through this handle and not yet polled. */
PD3_API uint32_t pd3_host_inflight(const pd3_host* host);

/* The segment's file path (e.g. "/dev/shm/<name>"), valid while the handle is open; "" for NULL. */
PD3_API const char* pd3_host_name(const pd3_host* host);

/* The mapped control block (read-only view for statistics), or NULL. */
PD3_API const pd3_control* pd3_host_control(const pd3_host* host);

#ifdef __cplusplus
}
#endif

#endif /* PD3_HOST_H */
