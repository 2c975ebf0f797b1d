// server_link.hpp — one memory-server connection of the Transfer Engine: a non-blocking connect +
// hello state machine, the request frames being filled and waiting to be sent, the frames in
// flight, and the receipt of their response frames straight into the unified response buffer.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "common/net.hpp"
#include "dpu/response_buffer.hpp"
#include "common/unique_fd.hpp"
#include "pd3/transport.h"
#include "pd3/wire.h"

namespace pd3 {

// Settings every link of one engine shares.
struct LinkOptions {
  std::string token;   // the cluster token, or the tenant's credential
  std::string tenant;  // whose regions and keys the links reach; "" = the default tenant
  uint32_t max_batch_records = 4096;
  uint32_t max_batch_bytes = 1u << 20;
  uint32_t max_outstanding = 8;
  uint64_t batch_delay_ns = 0;
  uint64_t connect_timeout_ns = 0;  // connect + hello
  uint64_t reconnect_ns = 0;
  uint64_t request_timeout_ns = 0;
  uint64_t response_buffer_bytes = 0;
  uint64_t frame_response_cap = 0;  // response bytes one frame reserves at most (a lone record may exceed it)
};

// One request record handed to a link, with what the engine needs to check and route its answer.
struct LinkRecord {
  pd3_request hdr;  // the request's header (its bytes are in the frame)
  uint64_t pos;     // request-ring position: checked against the host's fence before answering
  uint64_t space;   // response_space(): most bytes its response record may take
  uint64_t tried;   // ALLOCATE: bit i set once link i refused it for lack of space (≤ kMaxPlacementServers links)
};

// A response frame received into the response buffer, handed to the engine.
struct ReceivedFrame {
  std::vector<LinkRecord> records;  // the requests it answers, in order
  ResponseSpace space;              // where it lies; release it once its records are published
  const uint8_t* body;              // `records.size()` well-formed response records
  uint32_t body_len;
};

// Where a link's connection stands.
enum class LinkState : uint8_t { kDown, kConnecting, kHello, kUp };

// One memory server connection. Single-threaded: owned by the engine thread. Every method that
// returns an error status has set pd3_last_error to say why; the caller then closes the link.
class ServerLink {
 public:
  // `index` is the value registered with `epoll_fd` for this link's socket.
  ServerLink(const Endpoint& endpoint, uint32_t index, int epoll_fd, const LinkOptions& options);

  // ---- connection ----
  // Starts a non-blocking connect when the link is down and its retry time has come. Returns
  // PD3_OK (started, or not due) or the reason the attempt failed at once (the link stays down).
  int connect_if_due(uint64_t now);
  // Handles epoll readiness: connect progress, hello, sends and responses. Response frames that
  // arrive complete are appended to *out (they are valid even when an error follows). Returns
  // PD3_OK or why the connection is unusable.
  int on_events(uint32_t events, std::vector<ReceivedFrame>* out);
  // PD3_E_TIMEOUT when the connect + hello deadline passed, or the oldest frame in flight waited
  // longer than the request timeout; else PD3_OK.
  int check_deadlines(uint64_t now) const;
  // Closes the socket and hands every record it holds (in flight and unsent) to *orphans,
  // releasing their response space. The next connect attempt is due `reconnect` from `now`.
  void close(uint64_t now, ResponseBuffer& buffer, std::vector<LinkRecord>* orphans);

  // ---- requests ----
  // Whether a record could ever be sent here: its frame within the server's limit and its
  // response within the response buffer.
  bool fits(uint32_t record_len, uint64_t space) const;
  // Copies one request record (header and payload, as in the request ring) into the frame being
  // filled: the emulated "DMA read" into the unified request buffer.
  void add(const uint8_t* record, uint32_t record_len, const LinkRecord& meta, uint64_t now);
  // Sends the frames that are due, oldest first, while fewer than max_outstanding are in flight
  // and the response buffer has room for their responses. Returns PD3_OK or a send error.
  int dispatch(uint64_t now, ResponseBuffer& buffer);
  // Two frames' worth of records wait unsent: the engine stops taking requests until they go.
  bool backlogged() const;
  // Earliest time after `now` something of this link falls due (retry, deadline, batch delay), or
  // a time already past that needs action; UINT64_MAX if none.
  uint64_t next_deadline(uint64_t now) const;

  // ---- state ----
  const Endpoint& endpoint() const { return endpoint_; }
  LinkState state() const { return state_; }
  bool up() const { return state_ == LinkState::kUp; }
  int server_id() const { return server_id_; }     // -1 until the first hello
  uint64_t capacity() const { return capacity_; }
  uint64_t& free_bytes() { return free_bytes_; }   // the hello's figure, adjusted by the engine
  uint64_t free_bytes() const { return free_bytes_; }
  size_t inflight_records() const { return inflight_records_; }
  uint64_t frames_sent() const { return frames_sent_; }
  uint64_t bytes_sent() const { return bytes_sent_; }
  uint64_t bytes_received() const { return bytes_received_; }

 private:
  // A request frame being filled or waiting to be sent.
  struct PendingFrame {
    std::vector<uint8_t> bytes;  // pd3_frame header, then the request records
    std::vector<LinkRecord> records;
    uint64_t response_bytes;     // frame header + Σ response_space
    uint64_t first_ns;           // when its first record came
  };
  // A frame sent (or being written) whose response has not arrived.
  struct InflightFrame {
    uint64_t seq;
    std::vector<LinkRecord> records;
    ResponseSpace space;
    uint64_t sent_ns;
  };
  // Bytes queued for the socket: a request frame or the hello.
  struct Outgoing {
    std::vector<uint8_t> bytes;
    size_t sent;
  };

  int resolve();
  int on_connected();
  int on_hello_reply();
  int receive(std::vector<ReceivedFrame>* out);
  // The in-flight frame a response header answers (the oldest, unless the server may answer in any
  // order), checked against it; nullptr with pd3_last_error set if none fits.
  InflightFrame* match_response(const pd3_frame& h);
  int write_out();
  void update_interest();
  uint64_t frame_limit() const;
  void start_frame(uint64_t now);
  bool frame_full(const PendingFrame& f) const;

  Endpoint endpoint_;
  uint32_t index_;
  int epoll_fd_;
  LinkOptions options_;
  sockaddr_in address_{};
  bool resolved_ = false;

  UniqueFd fd_;
  LinkState state_ = LinkState::kDown;
  uint32_t interest_ = 0;   // epoll events registered for fd_ (0: not registered)
  uint64_t retry_at_ = 0;   // kDown: when the next connect attempt is due
  uint64_t deadline_ = 0;   // kConnecting / kHello: when the attempt times out
  FrameReader hello_reader_{4096};

  int server_id_ = -1;
  uint64_t capacity_ = 0;
  uint64_t free_bytes_ = 0;
  uint32_t max_frame_ = 0;

  std::deque<PendingFrame> unsent_;   // back() is the frame being filled
  std::deque<InflightFrame> inflight_;
  std::deque<Outgoing> outgoing_;
  std::vector<std::vector<uint8_t>> spare_;  // sent frames' buffers, reused for new frames
  uint64_t next_seq_ = 1;
  bool any_order_ = false;   // the server granted PD3_HELLO_ANY_ORDER: responses matched by seq
  pd3_frame header_{};       // the header of the response being received, until it is matched
  InflightFrame* receiving_ = nullptr;  // the frame it answers (stable: deque::push_back keeps references)
  uint64_t received_ = 0;    // bytes of that response received so far
  uint64_t frame_len_ = 0;   // its length, once the header is in (0 before)
  size_t unsent_records_ = 0;
  uint64_t unsent_bytes_ = 0;
  size_t inflight_records_ = 0;

  uint64_t frames_sent_ = 0;
  uint64_t bytes_sent_ = 0;
  uint64_t bytes_received_ = 0;
};

}  // namespace pd3
