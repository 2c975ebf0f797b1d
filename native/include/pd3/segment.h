/* pd3/segment.h — layout of the shared segment between the host library and the DPU agent.
 *
 * The host creates the segment (it owns host memory, as with DMA registration); the agent attaches it
 * by name. Layout, in order, every section 4 KiB-aligned:
 *
 *   [ pd3_control | request ring | response ring | LZ descriptors | LZ index buckets | LZ data ring ]
 *
 * All offsets and sizes are fixed at creation and validated on every attach (pd3_segment_validate).
 * Cursors are monotonic 64-bit byte positions (rings) or item sequence numbers (Loading Zone); a
 * position maps into its ring as `pos & (size - 1)`. Fields written by different sides live on
 * different cache lines.
 */
#ifndef PD3_SEGMENT_H
#define PD3_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PD3_SEGMENT_MAGIC 0x31474553334450ULL /* "PD3SEG1" followed by a zero byte, little-endian */
#define PD3_LAYOUT_VERSION 6u /* 6: batched slots (PD3_SLOT_RECORDS); 5: the host's completion doorbell (line 13); 4: 16-byte pd3_request */
#define PD3_CACHE_LINE 64u
#define PD3_SECTION_ALIGN 4096u
#define PD3_CONTROL_SIZE 4096u

/* Bounds on sizes a segment may be created with (and that attach accepts). */
#define PD3_RING_MIN_BYTES 4096ull
#define PD3_RING_MAX_BYTES (1ull << 30)
#define PD3_LZ_MIN_ITEMS 16u
#define PD3_LZ_MAX_ITEMS (1u << 24)

/* Defaults used when a create call leaves a size at 0. */
#define PD3_DEFAULT_REQUEST_RING_BYTES (1ull << 20)
#define PD3_DEFAULT_RESPONSE_RING_BYTES (4ull << 20)
#define PD3_DEFAULT_LZ_DATA_BYTES (16ull << 20)
#define PD3_DEFAULT_LZ_ITEMS (1u << 16)

/* A heartbeat older than this means the agent is gone. */
#define PD3_DEFAULT_AGENT_TIMEOUT_MS 1000u

/* The control block at offset 0 of every segment. */
typedef struct pd3_control {
  /* Line 0-1: identity and layout, written once by the creator before the name is published. */
  uint64_t magic;            /* PD3_SEGMENT_MAGIC */
  uint32_t layout_version;   /* PD3_LAYOUT_VERSION */
  uint32_t control_size;     /* PD3_CONTROL_SIZE */
  uint64_t segment_size;     /* bytes of the whole segment; must equal the file size */
  uint64_t req_offset;       /* request ring: offset and size (power of two) */
  uint64_t req_size;
  uint64_t resp_offset;      /* response ring */
  uint64_t resp_size;
  uint64_t lz_desc_offset;   /* lz_desc_count pd3_lz_desc */
  uint64_t lz_bucket_offset; /* lz_bucket_count uint64_t chain heads (item seqs) */
  uint64_t lz_data_offset;   /* Loading Zone data ring: offset and size (power of two) */
  uint64_t lz_data_size;
  uint32_t lz_desc_count;    /* power of two: most items pending at once */
  uint32_t lz_bucket_count;  /* power of two, 2 × lz_desc_count */
  uint32_t creator_pid;
  uint32_t reserved0;
  uint64_t created_unix_ns;
  uint64_t seal_salt;        /* random per segment, XORed into slot seals (see pd3_slot) */
  uint8_t pad_identity[2 * PD3_CACHE_LINE - 120];

  /* Line 2: agent liveness, written by the agent. */
  uint64_t agent_heartbeat_ns; /* CLOCK_MONOTONIC of the agent's last beat; 0 = never attached */
  uint32_t agent_pid;
  uint32_t agent_attaches;     /* incremented on each agent attach */
  uint64_t agent_fence_ack;    /* the agent will never again answer a request below this position */
  uint8_t pad_agent[PD3_CACHE_LINE - 24];

  /* Lines 3-4: request ring cursors. Producers (host threads) CAS req_tail; the agent stores req_head. */
  uint64_t req_tail;
  uint8_t pad_req_tail[PD3_CACHE_LINE - 8];
  uint64_t req_head;
  uint8_t pad_req_head[PD3_CACHE_LINE - 8];

  /* Lines 5-6: response ring cursors. The agent stores resp_tail; the host's poller stores resp_head. */
  uint64_t resp_tail;
  uint8_t pad_resp_tail[PD3_CACHE_LINE - 8];
  uint64_t resp_head;
  uint8_t pad_resp_head[PD3_CACHE_LINE - 8];

  /* Line 7: Loading Zone cursors, all written by the agent only. */
  uint64_t lz_tail_seq;  /* seq the next item will get (seqs start at 1) */
  uint64_t lz_head_seq;  /* oldest item not yet reclaimed */
  uint64_t lz_data_tail; /* monotonic byte position where the next record goes */
  uint64_t lz_data_head; /* monotonic byte position of the oldest live record */
  uint8_t pad_lz[PD3_CACHE_LINE - 32];

  /* Line 8: host-side counters (relaxed; statistics only). */
  uint64_t host_requests;    /* records published to the request ring */
  uint64_t host_ring_full;   /* publishes refused with PD3_E_AGAIN */
  uint64_t host_responses;   /* responses consumed by poll */
  /* Direct mode's registration of the caller's buffers (MRRC, docs/mrrc.md), summed over handles. */
  uint64_t host_mr_hits;          /* buffers a cached registration covered */
  uint64_t host_mr_misses;        /* buffers that needed a registration (whole or in part) */
  uint64_t host_mr_registrations; /* registrations issued (a split buffer may need several) */
  uint64_t host_mr_pinned_bytes;  /* bytes registered now (a gauge) */
  uint64_t host_mr_failures;      /* buffers the cache refused (too large, pin limit): sent unregistered */

  /* Line 9: agent-side counters (relaxed; statistics only). */
  uint64_t agent_batches;         /* passes that took at least one request */
  uint64_t agent_requests;        /* request records taken */
  uint64_t agent_corrupt;         /* malformed request records seen */
  uint64_t agent_responses;       /* response records published */
  uint64_t lz_produced;           /* items published to the Loading Zone */
  uint64_t lz_consumed;           /* items the agent found CONSUMED when it cleaned or reclaimed them */
  uint64_t lz_reclaimed_unconsumed; /* items reclaimed while still PRODUCED (zone was full) */
  uint64_t lz_invalidated;        /* items withdrawn because their key changed */

  /* Line 10: the host's fence, written when it declares the agent down (docs/host-library.md).
   * Requests at request-ring positions below it were already failed by the host: an agent that has
   * read the fence discards them unexecuted, and no agent answers them (each response re-checks it).
   * An agent pass that began before the store may still have taken, and executed, some of them. */
  uint64_t req_fence;
  uint8_t pad_fence[PD3_CACHE_LINE - 8];

  /* Line 11: more agent-side counters (relaxed; statistics only). */
  uint64_t agent_fenced;          /* requests discarded because they were below req_fence */
  uint8_t pad_agent_counters[PD3_CACHE_LINE - 8];

  /* Line 12: the agent's doorbell (a futex). The agent stores agent_sleeping before it sleeps
   * (PD3_AGENT_SLEEPING: in FUTEX_WAIT on agent_doorbell) and clears it after; a host thread that
   * publishes a request while it is set takes it back to PD3_AGENT_AWAKE (a CAS: one waker per
   * sleep), increments agent_doorbell and wakes it. Both sides fence
   * between their store and their load (docs/transfer-engine.md), so a request is never left
   * waiting for the agent's sleep to time out. */
  uint32_t agent_sleeping;  /* PD3_AGENT_AWAKE, PD3_AGENT_POLLING or PD3_AGENT_SLEEPING */
  uint32_t agent_doorbell;  /* futex word: incremented by every ring */
  uint8_t pad_agent_doorbell[PD3_CACHE_LINE - 8];

  /* Line 13: the host's completion doorbell (a futex), line 12's mirror. A host thread waiting for
   * responses lowers host_wake_at to the agent_responses count it wants, counts itself in
   * host_sleeping, fences, looks at agent_responses once more and waits on host_doorbell. The agent,
   * after publishing responses and their count, fences, and if someone sleeps and the count reached
   * host_wake_at, resets host_wake_at to PD3_WAKE_NEVER (a CAS: a lower target stored meanwhile
   * stays) and wakes every sleeper, which re-arm if they want more. A waiter also stops at its
   * timeout, so a target never reached costs latency, never a hang. */
  uint32_t host_sleeping;   /* host threads waiting on host_doorbell */
  uint32_t host_doorbell;   /* futex word: incremented by every wake */
  uint64_t host_wake_at;    /* agent_responses count to wake the sleepers at; PD3_WAKE_NEVER: none */
} pd3_control;

#define PD3_WAKE_NEVER UINT64_MAX /* host_wake_at when nobody waits for a count */

#define PD3_AGENT_AWAKE 0u    /* working or spinning: nobody needs to ring */
#define PD3_AGENT_POLLING 1u  /* waiting for its sockets (responses due): only its own threads can wake it */
#define PD3_AGENT_SLEEPING 2u /* waiting on agent_doorbell: any ring wakes it */

/* Every control-block field, for the offset table the addon exports to TS. */
#define PD3_CONTROL_FIELDS(X)                                                                       \
  X(magic) X(layout_version) X(control_size) X(segment_size) X(req_offset) X(req_size)              \
  X(resp_offset) X(resp_size) X(lz_desc_offset) X(lz_bucket_offset) X(lz_data_offset)             \
  X(lz_data_size) X(lz_desc_count) X(lz_bucket_count) X(creator_pid) X(created_unix_ns) X(seal_salt)            \
  X(agent_heartbeat_ns) X(agent_pid) X(agent_attaches) X(agent_fence_ack) X(req_tail) X(req_head) X(resp_tail)         \
  X(resp_head) X(lz_tail_seq) X(lz_head_seq) X(lz_data_tail) X(lz_data_head) X(host_requests)       \
  X(host_ring_full) X(host_responses) X(host_mr_hits) X(host_mr_misses) X(host_mr_registrations)          \
  X(host_mr_pinned_bytes) X(host_mr_failures) X(agent_batches) X(agent_requests) X(agent_corrupt)           \
  X(agent_responses) X(lz_produced) X(lz_consumed) X(lz_reclaimed_unconsumed) X(lz_invalidated)     \
  X(req_fence) X(agent_fenced) X(agent_sleeping) X(agent_doorbell) X(host_sleeping) X(host_doorbell)      \
  X(host_wake_at)

/* Sizes asked for at creation; 0 picks the default. Ring sizes and lz_items must be powers of two. */
typedef struct pd3_segment_sizes {
  uint64_t request_ring_bytes;
  uint64_t response_ring_bytes;
  uint64_t lz_data_bytes;
  uint32_t lz_items;
  uint32_t reserved;
} pd3_segment_sizes;

#ifdef __cplusplus
}
#endif

#endif /* PD3_SEGMENT_H */
