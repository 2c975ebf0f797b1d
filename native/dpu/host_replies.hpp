// host_replies.hpp — the responses the Transfer Engine owes the host, kept in order and published
// to the response ring as it has room (the DMA write, paper §6.1 step ④), each first checked
// against the host's fence.
#pragma once

#include <cstdint>
#include <deque>
#include <string>

#include "dpu/response_buffer.hpp"
#include "dpu/response_writer.hpp"

namespace pd3 {

// The ring position of a record that answers no host request (never fenced): a hint's reply, a
// prefetch's link record.
constexpr uint64_t kNoRingPosition = ~uint64_t{0};

// One response owed to the host.
struct HostReply {
  uint64_t pos = 0;               // request-ring position of the request it answers
  uint16_t op_id = 0;
  int32_t status = 0;             // PD3_OK or a negative pd3_status
  uint32_t size = 0;              // bytes accessed; with PD3_OK for READ / CONTROL, the data's length
  const uint8_t* data = nullptr;  // the data in the response buffer; nullptr: use `text`
  uint64_t release = 0;           // response-buffer ticket freed once this reply is gone (0: none)
  std::string text;               // data the engine produced itself (STATS)
};

// What one publish pass did.
struct PublishCounts {
  uint64_t published = 0;  // records written to the response ring
  uint64_t errors = 0;     // of which with a non-ok status
  uint64_t fenced = 0;     // dropped: the host had already failed their requests
};

// The ordered backlog. Single-threaded: owned by the engine thread.
class HostReplies {
 public:
  void push(HostReply reply) { queue_.push_back(std::move(reply)); }
  HostReply& back() { return queue_.back(); }
  size_t size() const { return queue_.size(); }
  bool empty() const { return queue_.empty(); }

  // Publishes replies oldest first, as one batch, until the response ring is full (the rest wait,
  // in order, for the next call), dropping those below `fence` (the host's, read this pass), and
  // releases their buffer space.
  PublishCounts publish(ResponseWriter& writer, uint64_t fence, ResponseBuffer& buffer);
  // Forgets every reply still waiting, releasing their buffer space.
  void clear(ResponseBuffer& buffer);

 private:
  std::deque<HostReply> queue_;
};

}  // namespace pd3
