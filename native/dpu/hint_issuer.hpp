// hint_issuer.hpp — prefetch issuer "host" (PrefetchSetup::issuer, the paper's §6.2 comparison
// path): the Transfer Engine hands each of the prefetcher's prefetches to the host as a hint, the
// host sends it back as a PREFETCH request, and only then is it queued to its server; hints the
// host does not return in time are given up. Engine thread only; internal to native/dpu.
#pragma once

#include <cstdint>

#include "dpu/engine_counters.hpp"
#include "dpu/hint_table.hpp"
#include "dpu/host_replies.hpp"
#include "dpu/request_reader.hpp"

namespace pd3 {

// What the hint issuer needs of the Transfer Engine (which implements it): its links, and the
// prefetcher's records and answers. Links are named by index, as the prefetcher names servers.
class HintPort {
 public:
  virtual ~HintPort() = default;
  // The server id link `li` announced in its hello while the link is up; -1 if there is no link
  // `li` or it is not up.
  virtual int up_server_id(int li) const = 0;
  // The index of the link serving server id `server_id`, or -1.
  virtual int link_of_server(uint32_t server_id) const = 0;
  // Queues a PREFETCH record for link `li`, behind the link's backlog if it has one: PD3_OK or
  // PD3_E_UNAVAILABLE (never PD3_E_AGAIN).
  [[nodiscard]] virtual int queue_returned_prefetch(int li, uint16_t op_id, const uint8_t* key, uint16_t key_len,
                                                    uint32_t max_size, uint64_t now) = 0;
  // Prefetch `op_id` for link `li` ended with `status` without an answer from the server: the
  // prefetcher finishes it.
  virtual void end_prefetch(uint16_t op_id, int li, int status, uint64_t now) = 0;
};

// The hint path: hints out to the host (as replies that answer no request), their PREFETCH
// requests back, and hints never returned; owns the table of outstanding hints.
class HintIssuer {
 public:
  // enabled: prefetches go to the host as hints first (PrefetchSetup::issuer "host"); when false
  // every PREFETCH request from the host is refused. A hint is given up `timeout_ns` after it went.
  HintIssuer(bool enabled, uint64_t timeout_ns, HintPort& port, HostReplies& replies, EngineCounters& counters)
      : enabled_(enabled), timeout_ns_(timeout_ns), port_(port), replies_(replies), counters_(counters) {}

  bool enabled() const { return enabled_; }
  // The hint out: prefetch `op_id` of `key` from link `li` (PrefetchPort::send_prefetch). PD3_OK,
  // PD3_E_AGAIN (the host is not taking its replies: try later) or PD3_E_UNAVAILABLE (link not up).
  [[nodiscard]] int send_hint(int li, uint16_t op_id, const uint8_t* key, uint16_t key_len, uint32_t max_size,
                              uint64_t now);
  // The host's PREFETCH back (a request-ring record, v.hdr.op_id a prefetch id): queued to its
  // server if it matches an outstanding hint, else refused. Never answered.
  void take_hinted_prefetch(const RequestView& v, uint64_t now);
  // Gives up every hint whose deadline is ≤ now.
  void expire_hints(uint64_t now);

 private:
  const bool enabled_;
  const uint64_t timeout_ns_;
  HintPort& port_;
  HostReplies& replies_;      // the engine's replies to the host, where hints go out
  EngineCounters& counters_;
  HintTable hints_;           // hints the host has not returned yet
};

}  // namespace pd3
