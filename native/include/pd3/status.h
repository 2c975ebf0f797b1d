/* pd3/status.h — status codes shared by every PD3 boundary: C ABI returns, response records, TS errors.
 *
 * Convention: functions return PD3_OK (0) or a negative pd3_status; functions that return a count or a
 * size return it as a non-negative value and errors as a negative pd3_status. Response records carry
 * the positive magnitude (see wire.h).
 */
#ifndef PD3_STATUS_H
#define PD3_STATUS_H

/* Marks the symbols libpd3host exports; everything else in the library is hidden. */
#ifndef PD3_API
#define PD3_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* X-macro so the enum, the name table and the TS export are generated from one list. */
#define PD3_STATUS_LIST(X)                                                                        \
  X(PD3_OK, 0, "ok")                                                                              \
  X(PD3_E_AGAIN, 1, "ring full, retry after the consumer drains (back-pressure)")                \
  X(PD3_E_INVAL, 2, "invalid argument")                                                           \
  X(PD3_E_NOMEM, 3, "out of memory")                                                              \
  X(PD3_E_SYS, 4, "system call failed (see errno in the log)")                                    \
  X(PD3_E_EXISTS, 5, "segment already exists")                                                    \
  X(PD3_E_NOENT, 6, "segment not found")                                                          \
  X(PD3_E_BAD_MAGIC, 7, "not a PD3 segment (wrong magic)")                                        \
  X(PD3_E_BAD_VERSION, 8, "segment layout version not supported")                                 \
  X(PD3_E_BAD_SIZE, 9, "segment size does not match its control block")                          \
  X(PD3_E_BAD_LAYOUT, 10, "segment sections are out of bounds, overlap or are misaligned")        \
  X(PD3_E_TOO_BIG, 11, "record larger than the ring can ever hold")                               \
  X(PD3_E_INFLIGHT, 12, "16384 requests already in flight")                                       \
  X(PD3_E_CORRUPT, 13, "malformed record in a ring")                                              \
  X(PD3_E_NOT_FOUND, 14, "not found (key, region, file or symbol)")                                \
  X(PD3_E_RANGE, 15, "offset or size outside the region")                                         \
  X(PD3_E_BAD_REGION, 16, "unknown region id")                                                    \
  X(PD3_E_BAD_OP, 17, "unknown operation")                                                        \
  X(PD3_E_DEST_SMALL, 18, "destination buffer smaller than the item")                             \
  X(PD3_E_AGENT_DOWN, 19, "agent heartbeat stopped")                                              \
  X(PD3_E_CLOSED, 20, "handle closed")                                                            \
  X(PD3_E_NOT_OWNER, 21, "only the process that created the segment may issue requests")         \
  X(PD3_E_UNAVAILABLE, 22, "memory server unavailable")                                           \
  X(PD3_E_NOSPACE, 23, "no room (memory server capacity, or a full table)")                     \
  X(PD3_E_AUTH, 24, "auth token refused by the memory server")                                    \
  X(PD3_E_PROTOCOL, 25, "protocol violation (malformed frame, hello or request)")                \
  X(PD3_E_TIMEOUT, 26, "memory server did not answer in time")                                  \
  X(PD3_E_FORBIDDEN, 27, "region belongs to another tenant")                                   \
  X(PD3_E_MOVED, 28, "region is moving or moved to another server: re-resolve its name and retry")

typedef enum pd3_status {
#define PD3_STATUS_ENUM(name, value, text) name = -(value),
  PD3_STATUS_LIST(PD3_STATUS_ENUM)
#undef PD3_STATUS_ENUM
} pd3_status;

/* Human-readable text for a status (negative or positive magnitude); never NULL. */
PD3_API const char* pd3_status_str(int status);

/* Why the last failing PD3 call on this thread failed, e.g. "PD3_E_BAD_MAGIC: ..."; never NULL. */
PD3_API const char* pd3_last_error(void);

/* Symbolic name of a status, e.g. "PD3_E_AGAIN"; never NULL. */
PD3_API const char* pd3_status_name(int status);

#ifdef __cplusplus
}
#endif

#endif /* PD3_STATUS_H */
