// held_responses.hpp — the response frames of one connection that wait for the sync of their
// writes (the SSD tier's group commit), and the order in which they may leave.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "memserver/mem_store.hpp"
#include "pd3/status.h"

namespace pd3 {

// Whole response frames held until MemStore::sync_status says their frame's writes (or what it
// read) are durable. In order (the default), a frame leaves only after every frame held before it;
// with any_order (the client's hello asked for PD3_HELLO_ANY_ORDER) each leaves once its own sync
// is done. Single-threaded: the connection's loop thread.
class HeldResponses {
 public:
  void set_any_order(bool any_order) { any_order_ = any_order; }
  bool empty() const { return held_.empty(); }
  size_t size() const { return held_.size(); }
  size_t bytes() const { return bytes_; }

  // Whether a frame whose sync is `ticket` (0: durable already) must be held rather than sent.
  bool must_hold(uint64_t ticket) const { return ticket != 0 || (!any_order_ && !held_.empty()); }
  // Holds the response `frame` (header included) of request frame `seq`, `records` records.
  void hold(uint64_t ticket, uint64_t seq, uint32_t records, std::vector<uint8_t> frame);

  // Appends to *out every held frame that may leave now, oldest first, calling `count(records)` for
  // each. Returns PD3_OK, or the status of a failed sync with *failed_seq set to its frame's seq
  // (the caller closes the connection: nothing held is sent after it).
  template <class Count>
  [[nodiscard]] int release(MemStore& store, std::vector<uint8_t>* out, Count&& count, uint64_t* failed_seq);

  void clear() {
    held_.clear();
    bytes_ = 0;
  }

 private:
  struct Frame {
    uint64_t ticket;
    uint64_t seq;
    uint32_t records;
    std::vector<uint8_t> bytes;
  };
  std::deque<Frame> held_;  // oldest first
  size_t bytes_ = 0;
  bool any_order_ = false;
};

template <class Count>
int HeldResponses::release(MemStore& store, std::vector<uint8_t>* out, Count&& count, uint64_t* failed_seq) {
  for (auto it = held_.begin(); it != held_.end();) {
    if (it->ticket != 0) {
      const int status = store.sync_status(it->ticket);
      if (status == tier::kWait) {
        if (!any_order_) break;  // the later ones wait behind it
        ++it;
        continue;
      }
      if (status != tier::kReady) {
        *failed_seq = it->seq;
        return status;
      }
    }
    out->insert(out->end(), it->bytes.begin(), it->bytes.end());
    bytes_ -= it->bytes.size();
    count(it->records);
    it = held_.erase(it);
  }
  return PD3_OK;
}

}  // namespace pd3
