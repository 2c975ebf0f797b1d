// response_buffer.hpp — the Transfer Engine's unified response buffer (paper §6.1, Fig. 6 ② and
// ④): a byte ring in which the space a request frame's response can take is reserved before the
// frame is sent, the response frame is received straight into that space, and the host's
// response records are published from it.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>

namespace pd3 {

// One reservation: a contiguous run of bytes in the buffer.
struct ResponseSpace {
  uint64_t ticket = 0;  // names the reservation for release(); 0 = no reservation
  uint8_t* data = nullptr;
  uint64_t len = 0;
};

// The ring. Reservations are contiguous (a run that would cross the end starts over at offset 0)
// and may be released in any order; their bytes are reused in reservation order. Single-threaded:
// owned by the engine thread.
class ResponseBuffer {
 public:
  // Returns PD3_OK, PD3_E_INVAL (capacity 0) or PD3_E_NOMEM.
  static int create(uint64_t capacity, std::unique_ptr<ResponseBuffer>* out);

  // Reserves `len` bytes. False if the ring lacks room now (retry after releases), or ever
  // (len 0 or len > capacity(): callers check that before queueing work that would need it).
  bool reserve(uint64_t len, ResponseSpace* out);
  // Frees a reservation; unknown or already released tickets are ignored.
  void release(uint64_t ticket);

  uint64_t capacity() const { return capacity_; }

 private:
  // One reservation's end position (its leading pad included) and whether it was released.
  struct Chunk {
    uint64_t end;
    bool released;
  };

  ResponseBuffer(std::unique_ptr<uint8_t[]> bytes, uint64_t capacity)
      : bytes_(std::move(bytes)), capacity_(capacity) {}

  std::unique_ptr<uint8_t[]> bytes_;
  uint64_t capacity_;
  uint64_t head_ = 0;  // monotonic position of the oldest live byte
  uint64_t tail_ = 0;  // monotonic position where the next reservation starts
  std::deque<Chunk> chunks_;   // live reservations, oldest first
  uint64_t first_ticket_ = 1;  // ticket of chunks_.front()
};

}  // namespace pd3
