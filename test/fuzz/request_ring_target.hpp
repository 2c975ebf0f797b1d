// request_ring_target.hpp — one fuzz input → the agent's request-ring decoder (drain_requests),
// with its properties checked, through the shared-memory HostDma. Used by test/fuzz/request_ring_fuzzer.cpp (libFuzzer) and by
// test/native/transport_fuzz_test.cpp. A violated property calls abort().
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "../native/agent_rings.hpp"
#include "fuzz_assert.hpp"

namespace pd3fuzz {

// Lays `data` over the request ring of `c` (the first 8 bytes choose the head position; a valid
// seal is forced at head unless bit 0 of byte 8 is set), then drains it. Every record handed out
// must lie inside the ring; the pass must end with a record count or PD3_E_CORRUPT.
inline int run_request_ring_input(pd3_control* c, const uint8_t* data, size_t size) {
  uint8_t* ring = reinterpret_cast<uint8_t*>(c) + c->req_offset;
  const uint64_t ring_size = c->req_size;
  uint64_t head = 0;
  if (size >= 8) std::memcpy(&head, data, 8);
  head &= ~uint64_t(PD3_SLOT_ALIGN - 1);
  const bool force_seal = size < 9 || (data[8] & 1) == 0;
  std::memset(ring, 0, ring_size);
  if (size > 9) std::memcpy(ring + (head & (ring_size - 1)), data + 9, std::min<size_t>(size - 9, ring_size - (head & (ring_size - 1))));
  if (force_seal) {
    auto* s = reinterpret_cast<pd3_slot*>(ring + (head & (ring_size - 1)));
    s->seal = (head ^ c->seal_salt) | 1;
  }
  c->req_head = c->req_tail = head;
  c->req_fence = 0;
  int records = 0;
  const int rc = pd3test::drain_requests(c, 64, [&](const pd3::RequestView& v) {
    ++records;
    if (v.status != PD3_OK) return;
    const uint32_t len = pd3_request_payload_len(&v.hdr);
    // The payload is in the reader's copy: it must fit the slot the ring held (and ASan checks
    // that the bytes are there).
    PD3_FUZZ_ASSERT(v.record_len == sizeof(pd3_request) + len && v.record_len <= ring_size / 2);
    volatile uint8_t sink = 0;
    for (uint32_t i = 0; i < len; ++i) sink = sink + v.payload[i];
  });
  PD3_FUZZ_ASSERT(rc == PD3_E_CORRUPT || rc >= records);
  return records;
}

}  // namespace pd3fuzz
