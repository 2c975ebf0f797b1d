// response_buffer.cpp — see response_buffer.hpp.
#include "dpu/response_buffer.hpp"

#include <new>

#include "common/error.hpp"
#include "pd3/status.h"

namespace pd3 {

int ResponseBuffer::create(uint64_t capacity, std::unique_ptr<ResponseBuffer>* out) {
  if (capacity == 0) return fail(PD3_E_INVAL, "response buffer of 0 bytes");
  std::unique_ptr<uint8_t[]> bytes(new (std::nothrow) uint8_t[capacity]);
  if (!bytes) return fail(PD3_E_NOMEM, "response buffer of %llu bytes", (unsigned long long)capacity);
  out->reset(new ResponseBuffer(std::move(bytes), capacity));
  return PD3_OK;
}

bool ResponseBuffer::reserve(uint64_t len, ResponseSpace* out) {
  if (len == 0 || len > capacity_) return false;
  // An empty ring starts over at offset 0, so a reservation of up to the whole capacity always
  // fits once everything older is released.
  if (chunks_.empty()) head_ = tail_ = 0;
  const uint64_t offset = tail_ % capacity_;
  const uint64_t pad = offset + len > capacity_ ? capacity_ - offset : 0;
  if (tail_ + pad + len - head_ > capacity_) return false;
  const uint64_t start = tail_ + pad;
  tail_ = start + len;
  chunks_.push_back(Chunk{tail_, false});
  *out = ResponseSpace{first_ticket_ + chunks_.size() - 1, bytes_.get() + start % capacity_, len};
  return true;
}

void ResponseBuffer::release(uint64_t ticket) {
  if (ticket < first_ticket_ || ticket - first_ticket_ >= chunks_.size()) return;
  chunks_[ticket - first_ticket_].released = true;
  while (!chunks_.empty() && chunks_.front().released) {
    head_ = chunks_.front().end;
    chunks_.pop_front();
    ++first_ticket_;
  }
}

}  // namespace pd3
