// free_ids.hpp — the request ids not in use, handed out in the order they came back (a FIFO).
//
// Why a FIFO and not a stack: an id indexes the core's in-flight table, and answers come back
// in about the order requests went out. Handed out in the order they were freed, ids cycle
// through the table in order, so staging and completion both walk its entries front to back; from
// a stack they come out in an order that scrambles over time. It saves little: about 0.6 ns of
// the host's ~35 per request against an agent that answers at once (docs/benchmarks.md).
#pragma once

#include <array>
#include <cassert>
#include <cstdint>

#include "pd3/wire.h"

namespace pd3 {

// Fixed-capacity FIFO of the ids in [0, PD3_MAX_INFLIGHT). Not thread-safe: HostCore::id_mu
// guards the core's.
class FreeIds {
 public:
  static constexpr uint32_t kCapacity = PD3_MAX_INFLIGHT;
  static_assert((kCapacity & (kCapacity - 1)) == 0, "positions wrap with a mask");

  // Every id, in increasing order.
  FreeIds() {
    for (uint32_t id = 0; id < kCapacity; ++id) ids_[id] = uint16_t(id);
    size_ = kCapacity;
  }

  bool empty() const { return size_ == 0; }
  uint32_t size() const { return size_; }

  // Frees `id`. Precondition: it is not free already (so the FIFO cannot overflow).
  void push(uint16_t id) {
    assert(id < kCapacity && size_ < kCapacity);
    ids_[(head_ + size_) & (kCapacity - 1)] = id;
    ++size_;
  }
  // The id freed longest ago. Precondition: !empty().
  uint16_t pop() {
    assert(size_ > 0);
    const uint16_t id = ids_[head_];
    head_ = (head_ + 1) & (kCapacity - 1);
    --size_;
    return id;
  }

 private:
  std::array<uint16_t, kCapacity> ids_;
  uint32_t head_ = 0;  // position of the oldest free id
  uint32_t size_ = 0;
};

}  // namespace pd3
