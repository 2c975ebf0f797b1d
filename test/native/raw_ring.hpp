// raw_ring.hpp — rings the tests write by hand: a ring before a guard page, and slots written
// the way a (possibly broken) producer would.
#pragma once

#include <sys/mman.h>

#include <cstdint>
#include <cstring>

#include "pd3/segment.h"
#include "pd3/wire.h"

namespace pd3test {

// A control block followed by one ring of `ring_bytes` and then an inaccessible guard page, so a
// reader that strays past the ring's end faults. Both the request and response ring views of the
// control block point at the same bytes (tests use one at a time).
struct GuardedRing {
  uint8_t* base = nullptr;
  size_t len = 0;
  explicit GuardedRing(uint64_t ring_bytes, uint64_t salt = 0x5A17ull) {
    len = PD3_CONTROL_SIZE + ring_bytes + 4096;
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    base = static_cast<uint8_t*>(p);
    if (mprotect(base + PD3_CONTROL_SIZE + ring_bytes, 4096, PROT_NONE) != 0) return;
    pd3_control* ctl = c();
    ctl->req_offset = ctl->resp_offset = PD3_CONTROL_SIZE;
    ctl->req_size = ctl->resp_size = ring_bytes;
    ctl->seal_salt = salt;
  }
  ~GuardedRing() {
    if (base) munmap(base, len);
  }
  pd3_control* c() const { return reinterpret_cast<pd3_control*>(base); }
};

inline uint8_t* ring_bytes(pd3_control* c, bool request) {
  return reinterpret_cast<uint8_t*>(c) + (request ? c->req_offset : c->resp_offset);
}

// Writes a slot the way a (possibly broken) producer would: record bytes, then the header with the
// segment's seal rule. Advances the ring's tail past it like a reservation would.
inline void put_raw_slot(pd3_control* c, bool request, uint64_t pos, uint32_t length, uint16_t kind,
                         const void* rec, size_t rec_len, uint64_t seal_override = 0, uint16_t count = 0) {
  const uint64_t size = request ? c->req_size : c->resp_size;
  uint8_t* p = ring_bytes(c, request) + (pos & (size - 1));
  if (rec_len) std::memcpy(p + sizeof(pd3_slot), rec, rec_len);
  pd3_slot s{seal_override ? seal_override : ((pos ^ c->seal_salt) | 1u), length, kind, count};
  std::memcpy(p, &s, sizeof s);
  uint64_t& tail = request ? c->req_tail : c->resp_tail;
  const uint64_t end = pos + (length ? length : 16);
  if (end > tail) tail = end;
}

// Lays a PD3_SLOT_RECORDS slot of `count` 16-byte READ records at `slot`, framed right, under
// `seal`: requests, or responses with 8 data bytes (the bytes already there). For the fuzzers,
// which then change a byte of it. Returns the slot's length.
inline uint32_t lay_read_batch(uint8_t* slot, uint16_t count, bool requests, uint64_t seal) {
  for (uint16_t k = 0; k < count; ++k) {
    uint8_t* rec = slot + sizeof(pd3_slot) + 16 * k;
    if (requests) {
      const pd3_request r = pd3_make_request(pd3_op_id(PD3_OP_READ, k), 1, 0, 8);
      std::memcpy(rec, &r, sizeof r);
    } else {
      const pd3_response r{uint16_t(pd3_op_id(PD3_OP_READ, k)), 0, 8};
      std::memcpy(rec, &r, sizeof r);
    }
  }
  const pd3_slot s{seal, uint32_t(sizeof(pd3_slot) + 16 * count), PD3_SLOT_RECORDS, count};
  std::memcpy(slot, &s, sizeof s);
  return s.length;
}

}  // namespace pd3test
