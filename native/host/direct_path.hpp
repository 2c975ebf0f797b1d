// direct_path.hpp — the host library's direct mode: requests go from the host straight to the
// memory servers over the transport protocol, without the agent. Used when the agent is down (if
// configured) and as the "host-issued" baseline of the transfer benchmark.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "common/net.hpp"
#include "common/placement.hpp"
#include "common/transport_codec.hpp"
#include "pd3/status.h"

namespace pd3 {

// How the direct path reaches the memory servers.
struct DirectOptions {
  std::vector<Endpoint> servers;
  std::string token;               // the cluster token, or the tenant's credential
  std::string tenant;              // "" = the default tenant
  uint32_t timeout_ms = 1000;      // connect + hello deadline
  uint32_t retry_ms = 100;         // after a failed connect, fail fast for this long before retrying
  uint32_t request_timeout_ms = 2000;  // a server that answers nothing for this long is dropped
  uint32_t flush_bytes = 64 << 10; // queued request bytes that trigger a send without waiting for poll
  PlacementPolicy placement = PlacementPolicy::kPowerOfTwo;  // where ALLOCATE goes
  uint32_t refraction_ms = 1000;   // a server that answered NOSPACE gets no new region this long
};

// Connections to every memory server, owned by one HostCore. Thread-safe: one mutex guards all of
// it (the host's issuing threads append, whichever thread polls sends and receives).
class DirectPath {
 public:
  explicit DirectPath(DirectOptions options);
  ~DirectPath();

  // One request as submit() takes it: `hdr` as a ring record would carry it (its id aside).
  struct Request {
    uint16_t id = 0;
    pd3_request hdr{};
    const void* payload = nullptr;
    uint32_t payload_len = 0;
  };

  // Queues one request for the server that owns it: READ/WRITE by region id, DEALLOCATE by the
  // region in hdr.offset, ALLOCATE on the connected server options.placement picks (by default
  // power of two choices by free bytes). Returns PD3_OK, PD3_E_UNAVAILABLE (no such server
  // reachable), PD3_E_AUTH, PD3_E_BAD_REGION (no server has that id) or PD3_E_BAD_OP.
  [[nodiscard]] int submit(const Request& request);

  // Queues `requests` in order under one lock; statuses[i] gets what submit() would have returned
  // for requests[i]. statuses.size() must equal requests.size().
  void submit_all(std::span<const Request> requests, std::span<int> statuses);

  // Called with completed requests in batches (a response frame's, or a failed link's), each
  // naming its request by op_id; pointers are valid during the call. One call per batch lets the
  // caller take its own locks once per frame instead of once per response.
  using Done = std::function<void(std::span<const TransportResponse> responses)>;

  // Sends what is queued (as much as the sockets take) and completes what has arrived, calling
  // `done` once per response frame as it arrives (a server may answer a frame before an earlier
  // one whose writes wait for its disk: the hello asks for PD3_HELLO_ANY_ORDER). A connection that
  // fails completes its outstanding requests with PD3_E_UNAVAILABLE, one whose oldest frame went
  // unanswered for request_timeout_ms with PD3_E_TIMEOUT. Returns the number completed. Never blocks.
  int pump(const Done& done);

  // Waits until a connection has bytes to read (or room for queued bytes) or `timeout_us` passes.
  // Returns 1 if something may be ready, 0 on timeout or when nothing is outstanding.
  int wait(uint32_t timeout_us);

  // Requests submitted and not yet completed.
  uint64_t outstanding() const;

  // Pool membership, as the caller follows it (docs/pool.md). `member` false: the server at
  // `endpoint` gets no new region; its regions are still served while it answers. true: it may
  // get new regions again, or, new to this path, gets a connection of its own and is placed once
  // its hello succeeds. With kMaxPlacementServers servers known already, a new one takes the place
  // of one that left and is not connected (it holds no request). Precondition: `endpoint` was
  // parsed (parse_endpoint: a host and a port above 0). Returns PD3_OK or PD3_E_NOSPACE (every
  // place is taken by a member, or by a connected server).
  [[nodiscard]] int set_member(const Endpoint& endpoint, bool member);

 private:
  struct Link;

  int submit_locked(const Request& request);
  static std::unique_ptr<Link> new_link(const Endpoint& endpoint, size_t index);
  void add_link_locked(const Endpoint& endpoint);
  int ensure_connected_locked(Link& l);
  Link* link_for_region_locked(uint32_t region, int* err);
  Link* link_for_allocation_locked(int* err);
  // Closes `l` and completes everything queued or sent on it with `status`.
  int fail_link_locked(Link& l, const Done& done, const char* why, int status = PD3_E_UNAVAILABLE);
  // Frames the queued records and writes what the socket takes. PD3_OK or PD3_E_UNAVAILABLE.
  int flush_locked(Link& l);
  // Reads and completes every whole response frame `l` has. Returns the number completed.
  int receive_locked(Link& l, const Done& done);
  // Completes the records of response frame `f` (validated) against the sent frame it answers,
  // adding them to *completed; false if it answers none, or a record does not match (the caller
  // then fails the link, completing the rest).
  bool complete_frame_locked(Link& l, const pd3_frame& f, const uint8_t* body, const Done& done, int* completed);

  DirectOptions options_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Link>> links_;
  Placement placement_;                      // guarded by mu_
  std::vector<PlacementCandidate> candidates_;  // scratch for placement_.pick, guarded by mu_
  std::vector<TransportResponse> batch_;        // scratch: the responses handed to one Done call, guarded by mu_
};

// One memory server connection of the direct path.
struct DirectPath::Link {
  // A request on this link: enough to route its response and to fail it.
  struct Pending {
    uint16_t op_id;
    uint16_t ctl;  // CONTROL sub-op, else 0
  };
  // A request frame sent and not yet answered.
  struct SentFrame {
    uint64_t seq;
    uint64_t sent_ns;
    std::vector<Pending> ids;  // its requests, in order
  };

  Endpoint endpoint;
  size_t index = 0;  // in links_: placement's name for it
  int fd = -1;
  int server_id = -1;
  uint64_t free_bytes = 0;
  uint64_t retry_after_ns = 0;
  int last_error = PD3_OK;           // why the last connect failed: repeated while backing off
  uint64_t next_seq = 1;
  std::vector<uint8_t> queued;       // request records not yet framed
  uint32_t queued_records = 0;
  std::vector<Pending> queued_ids;   // their requests, in order
  OutBuffer out;                     // framed bytes not yet written
  std::deque<SentFrame> sent;        // frames sent and not yet answered, oldest first
  std::vector<std::vector<Pending>> spare_ids;  // answered frames' id lists, reused
  FrameReader reader;
};

}  // namespace pd3
