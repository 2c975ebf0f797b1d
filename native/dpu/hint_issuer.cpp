// hint_issuer.cpp — HintIssuer: the Transfer Engine's hints to the host, and what comes back.
#include "dpu/hint_issuer.hpp"

#include <utility>

#include "dpu/cuckoo_set.hpp"
#include "pd3/status.h"
#include "pd3/wire.h"

namespace pd3 {

namespace {

constexpr size_t kMaxReplyBacklogForHints = 2 * PD3_MAX_INFLIGHT;  // replies owed to a host not polling

}  // namespace

// The hint names the server by its id (what the host sends back); the prefetcher by link `li`.
int HintIssuer::send_hint(int li, uint16_t op_id, const uint8_t* key, uint16_t key_len, uint32_t max_size,
                          uint64_t now) {
  const int up_server = port_.up_server_id(li);
  if (up_server < 0) return PD3_E_UNAVAILABLE;
  // A host that does not poll leaves hints (and its responses) queued here: stop adding.
  if (replies_.size() >= kMaxReplyBacklogForHints) return PD3_E_AGAIN;
  const uint16_t server_id = uint16_t(up_server);  // up: a server id from its hello
  const pd3_prefetch_hint h{server_id, key_len, max_size};
  HostReply r;
  r.pos = kNoRingPosition;  // answers no request: never below a fence
  r.op_id = op_id;
  r.status = PD3_OK;
  r.text.reserve(sizeof h + key_len);
  r.text.append(reinterpret_cast<const char*>(&h), sizeof h);
  r.text.append(reinterpret_cast<const char*>(key), key_len);
  r.size = uint32_t(r.text.size());
  replies_.push(std::move(r));
  hints_.add(pd3_id_of(op_id), server_id, host_view_key_hash(key, key_len), now + timeout_ns_);
  bump(counters_.prefetch_hints);
  return PD3_OK;
}

void HintIssuer::take_hinted_prefetch(const RequestView& v, uint64_t now) {
  // Never a reply: the host used the agent's prefetch id, not one of its own request ids.
  const uint32_t server_id = v.hdr.region;
  const uint32_t key_len = v.hdr.size;
  if (!enabled_ || key_len == 0 || key_len > PD3_MAX_KEY_LEN || server_id > UINT16_MAX ||
      !hints_.take(pd3_id_of(v.hdr.op_id), uint16_t(server_id), host_view_key_hash(v.payload, key_len)))
    return bump(counters_.prefetch_hints_refused);
  bump(counters_.prefetch_hints_returned);
  // A server gone since the hint: the prefetcher already finished its prefetches (on_server_lost).
  const int li = port_.link_of_server(server_id);
  const int rc = port_.queue_returned_prefetch(li, v.hdr.op_id, v.payload, uint16_t(key_len), v.hdr.offset, now);
  if (rc != PD3_OK && li >= 0) port_.end_prefetch(v.hdr.op_id, li, rc, now);
}

void HintIssuer::expire_hints(uint64_t now) {
  hints_.expire(now, [&](uint32_t id, uint16_t server_id) {
    bump(counters_.prefetch_hints_expired);
    // A server gone since the hint: the prefetcher already finished its prefetches (on_server_lost).
    if (const int li = port_.link_of_server(server_id); li >= 0)
      port_.end_prefetch(pd3_op_id(PD3_OP_PREFETCH, id), li, PD3_E_TIMEOUT, now);
  });
}

}  // namespace pd3
