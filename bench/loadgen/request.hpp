// request.hpp — one request on the wire and what the load generator remembers about it until its
// reply is in (the key, the version written, the read's model ticket, when its latency started).
#pragma once

#include <cstdint>
#include <vector>

#include "version_model.hpp"

namespace pd3::loadgen {

// What a request is for; a YCSB READ-MODIFY-WRITE is a kRmwRead, then a kRmwWrite of the same op.
enum class RequestKind : uint8_t { kLoad, kRead, kUpdate, kInsert, kScan, kRmwRead, kRmwWrite };

inline bool is_write(RequestKind k) {
  return k == RequestKind::kLoad || k == RequestKind::kUpdate || k == RequestKind::kInsert ||
         k == RequestKind::kRmwWrite;
}

inline const char* request_name(RequestKind k, bool binary) {
  if (k == RequestKind::kScan) return binary ? "GET (scan)" : "MGET";
  return is_write(k) ? (binary ? "PUT" : "SET") : "GET";
}

// A request in flight (a slot of a connection's ring, reused).
struct Request {
  uint64_t start_ns = 0;  // latency origin: scheduled time (open loop) or send time; 0 = stamp at send
  uint64_t key = 0;       // the record (a scan's first)
  uint64_t version = 0;   // the version a write carries (kRmwRead: the one its write will carry)
  ReadTicket ticket = 0;  // --verify, one-key reads
  std::vector<ReadTicket> scan_tickets;  // --verify, scans: one per key
  uint32_t count = 1;     // keys in the request
  uint32_t entries = 0;   // reply entries seen so far
  RequestKind kind = RequestKind::kRead;
  bool measured = false;   // counts in the figures (issued inside the measured window)
  bool error = false;      // an entry was an error reply
  bool unexpected = false;  // an entry was not an answer to this request
};

// A fixed-capacity FIFO of requests (a connection's pipeline; replies come in request order).
class RequestRing {
 public:
  explicit RequestRing(uint32_t capacity) {
    uint32_t cap = 1;
    while (cap < capacity) cap *= 2;
    slots_.resize(cap);
    mask_ = cap - 1;
  }

  uint32_t size() const { return uint32_t(tail_ - head_); }
  bool empty() const { return tail_ == head_; }
  Request& front() { return slots_[head_ & mask_]; }
  // The slot after the last; the caller fills it, then push()es. Needs size() < capacity.
  Request& next() { return slots_[tail_ & mask_]; }
  void push() { ++tail_; }
  void pop() { ++head_; }
  // Position counters, for stamping the requests queued since a point.
  uint64_t tail_index() const { return tail_; }
  Request& at(uint64_t index) { return slots_[index & mask_]; }

 private:
  std::vector<Request> slots_;
  uint64_t mask_ = 0;
  uint64_t head_ = 0;
  uint64_t tail_ = 0;
};

}  // namespace pd3::loadgen
