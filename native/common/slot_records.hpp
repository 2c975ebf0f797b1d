// slot_records.hpp — slot sizes, and the records inside one PD3_SLOT_RECORDS slot (a batch
// published under one header and one seal): framing check and walk, shared by the agent's request
// reader and the host's response reader.
#pragma once

#include <cstdint>

#include "pd3/wire.h"

namespace pd3 {

// Bytes a record of `record_bytes` takes in a PD3_SLOT_RECORDS slot (rounded to PD3_RECORD_ALIGN).
constexpr uint64_t record_span(uint64_t record_bytes) {
  return (record_bytes + PD3_RECORD_ALIGN - 1) & ~uint64_t{PD3_RECORD_ALIGN - 1};
}

// Slot bytes for a body of `body_bytes` (one record, or a batch's record_spans): the header, the
// body, padding to PD3_SLOT_ALIGN. Every ring reader and writer sizes slots with it.
constexpr uint64_t slot_len(uint64_t body_bytes) {
  return (sizeof(pd3_slot) + body_bytes + PD3_SLOT_ALIGN - 1) & ~uint64_t{PD3_SLOT_ALIGN - 1};
}

// Stateless walker over the `count` records of a PD3_SLOT_RECORDS slot whose body (the bytes after
// the slot header) is `body_len` bytes long. `length_of(const uint8_t* record)` returns the bytes
// of the record that starts there, from its header alone; the walker has checked that
// `header_bytes` of it are in the body before it asks. Pass a lambda, not a function: a function
// decays to a pointer, and the walk then makes an indirect call per record.
template <uint32_t header_bytes, class LengthOf>
struct SlotRecords {
  const uint8_t* body;
  uint64_t body_len;
  uint32_t count;
  LengthOf length_of;

  // Calls fn(const uint8_t* record, uint32_t record_bytes) for each record in order, as long as
  // the records lie inside the body, and returns whether the framing held: all `count` records
  // inside, filling the body up to the slot's padding. A slot that fails is broken framing, and
  // the records before the break were handed out already: a reader that must deliver none of a
  // broken slot's records checks framed() first. A body in shared memory may change under the walk
  // (a faulty peer): every record is checked as it is reached, so none is ever read past the body.
  template <class Fn>
  [[nodiscard]] bool walk(Fn&& fn) const {
    if (count == 0) return false;
    uint64_t at = 0;
    for (uint32_t i = 0; i < count; ++i) {
      if (body_len - at < header_bytes) return false;  // at <= body_len holds: checked below
      const uint64_t len = length_of(body + at);
      if (len < header_bytes || len > body_len - at) return false;
      fn(body + at, uint32_t(len));
      at += record_span(len);
      if (at > body_len) return false;  // the last record's alignment runs past the body
    }
    return slot_len(at) == sizeof(pd3_slot) + body_len;
  }

  // Does the framing hold (walk's verdict, nothing handed out)?
  [[nodiscard]] bool framed() const {
    return walk([](const uint8_t*, uint32_t) {});
  }
};

template <uint32_t header_bytes, class LengthOf>
SlotRecords<header_bytes, LengthOf> slot_records(const uint8_t* body, uint64_t body_len, uint32_t count,
                                                 LengthOf length_of) {
  return {body, body_len, count, length_of};
}

}  // namespace pd3
