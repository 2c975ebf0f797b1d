// engine_prefetch.cpp — what the Transfer Engine (Engine, engine.hpp) offers the prefetch path:
// PrefetchPort, through which the prefetcher's PREFETCH records ride in the same frames as the
// host's (or go to the host as hints first, issuer "host": hint_issuer.hpp), and HintPort, what
// the hint issuer asks of the engine.
#include <cstring>

#include "dpu/engine.hpp"

namespace pd3 {

// ---- PrefetchPort --------------------------------------------------------------------------

int Engine::send_prefetch(int server, uint16_t op_id, const uint8_t* key, uint16_t key_len, uint32_t max_size,
                          uint64_t now) {
  if (hints_.enabled()) return hints_.send_hint(server, op_id, key, key_len, max_size, now);
  return queue_prefetch(server, op_id, key, key_len, max_size, /*may_defer=*/true, now);
}

// Queues one PREFETCH record for link `li`. may_defer: PD3_E_AGAIN while the link is backlogged
// (the prefetcher retries); otherwise it joins the backlog like any host request.
int Engine::queue_prefetch(int li, uint16_t op_id, const uint8_t* key, uint16_t key_len, uint32_t max_size,
                           bool may_defer, uint64_t now) {
  if (li < 0 || size_t(li) >= links_.size() || !links_[li].up()) return PD3_E_UNAVAILABLE;
  if (may_defer && links_[li].backlogged()) return PD3_E_AGAIN;
  const pd3_prefetch_request h{op_id, key_len, max_size};
  prefetch_record_.resize(sizeof h + key_len);
  std::memcpy(prefetch_record_.data(), &h, sizeof h);
  std::memcpy(prefetch_record_.data() + sizeof h, key, key_len);
  TransportRequest t;
  decode_request(prefetch_record_.data(), prefetch_record_.size(), &t);
  // No ring position: no host waits for this record (fail_records skips PREFETCH records).
  const LinkRecord meta{pd3_make_request(op_id, 0, 0, max_size), kNoRingPosition, response_space(t), 0};
  if (!links_[li].fits(uint32_t(prefetch_record_.size()), meta.space)) return PD3_E_UNAVAILABLE;
  links_[li].add(prefetch_record_.data(), uint32_t(prefetch_record_.size()), meta, now);
  return PD3_OK;
}

// The prefetcher names servers by link index, not by server id: ids reach 65,535, while its masks
// (this one) and its key directory hold 32 and 31 servers. Links past those are never prefetched from.
uint32_t Engine::servers_up() const {
  uint32_t mask = 0;
  for (size_t li = 0; li < links_.size() && li < 32; ++li)
    if (links_[li].up() && links_.of_server(uint32_t(links_[li].server_id())) == int(li)) mask |= uint32_t{1} << li;
  return mask;
}

// ---- HintPort (issuer "host", hint_issuer.hpp) ---------------------------------------------

int Engine::up_server_id(int li) const {
  if (li < 0 || size_t(li) >= links_.size() || !links_[li].up()) return -1;
  return links_[li].server_id();  // up: a server id from its hello
}

int Engine::queue_returned_prefetch(int li, uint16_t op_id, const uint8_t* key, uint16_t key_len, uint32_t max_size,
                                    uint64_t now) {
  return queue_prefetch(li, op_id, key, key_len, max_size, /*may_defer=*/false, now);
}

// Hints are given only while prefetching, so prefetch_ is set.
void Engine::end_prefetch(uint16_t op_id, int li, int status, uint64_t now) {
  prefetch_->prefetcher().on_response(op_id, li, status, nullptr, 0, nullptr, 0, now);
}

}  // namespace pd3
