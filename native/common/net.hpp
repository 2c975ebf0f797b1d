// net.hpp — TCP plumbing shared by the memory server, the Transfer Engine and the host's direct
// mode: endpoints, connect with a deadline, the client side of the hello, and buffered frame I/O
// on non-blocking sockets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pd3/transport.h"

namespace pd3 {

// A host:port pair.
struct Endpoint {
  std::string host;
  uint16_t port = 0;
  std::string str() const { return host + ":" + std::to_string(port); }
  bool operator==(const Endpoint&) const = default;  // the same host text and port
};

// Parses "host:port" (host: IPv4 address or name). Returns false if malformed; port 0 only with
// `any_port` (a listening address where the kernel picks the port).
bool parse_endpoint(std::string_view text, Endpoint* out, bool any_port = false);
// Parses a comma-separated list of endpoints; false if any is malformed or the list is empty.
bool parse_endpoints(std::string_view text, std::vector<Endpoint>* out);

// CLOCK_MONOTONIC in nanoseconds.
uint64_t now_ns();

// Connects to `ep` within `timeout_ms` and returns a non-blocking socket with TCP_NODELAY in *fd.
// Returns PD3_OK, PD3_E_UNAVAILABLE (refused, unreachable, resolution failed) or PD3_E_TIMEOUT.
int tcp_connect(const Endpoint& ep, int timeout_ms, int* fd);

// Client side of the hello on a connected non-blocking socket: sends HELLO for `tenant` ("" = the
// default tenant) with `token`, asking for `flags` (PD3_HELLO_*), and waits up to `timeout_ms` for
// the HELLO_REPLY (reply->flags: the flags granted). Returns PD3_OK, PD3_E_INVAL (token too long,
// bad tenant name, unknown flag), PD3_E_AUTH, PD3_E_BAD_VERSION, PD3_E_PROTOCOL,
// PD3_E_UNAVAILABLE (connection closed) or PD3_E_TIMEOUT.
[[nodiscard]] int client_hello(int fd, std::string_view token, std::string_view tenant, int timeout_ms,
                               pd3_hello_reply* reply, uint16_t flags = 0);

// Waits until `fd` is ready for `events` (POLLIN / POLLOUT) or CLOCK_MONOTONIC passes `deadline_ns`.
// Returns PD3_OK, PD3_E_TIMEOUT or PD3_E_UNAVAILABLE (the socket failed).
int wait_fd(int fd, short events, uint64_t deadline_ns);

// Writes all of buf to a non-blocking socket, waiting up to `timeout_ms` for room.
// Returns PD3_OK, PD3_E_UNAVAILABLE or PD3_E_TIMEOUT.
int send_all(int fd, const uint8_t* buf, size_t len, int timeout_ms);

// Frames arriving on a non-blocking socket. Not thread-safe.
class FrameReader {
 public:
  explicit FrameReader(uint32_t max_frame = PD3_FRAME_MAX_DEFAULT) : max_frame_(max_frame) {}

  // Reads what the socket has. Returns bytes read (≥ 0; 0 = nothing available), or
  // PD3_E_UNAVAILABLE when the peer closed the connection or it failed.
  long fill(int fd);

  // The next complete frame, if buffered: header in *hdr, body (hdr->length - header bytes) at
  // *body, valid until the next fill() or next(). Returns 1 for a frame, 0 if more bytes are
  // needed, PD3_E_PROTOCOL if the stream is malformed (bad header: the connection must be closed).
  int next(pd3_frame* hdr, const uint8_t** body);

  size_t buffered() const { return end_ - begin_; }

 private:
  uint32_t max_frame_;
  std::vector<uint8_t> buf_;
  size_t begin_ = 0;
  size_t end_ = 0;
};

// Bytes waiting to be written to a non-blocking socket. Not thread-safe.
class OutBuffer {
 public:
  std::vector<uint8_t>& bytes() { return buf_; }
  bool empty() const { return sent_ == buf_.size(); }
  size_t pending() const { return buf_.size() - sent_; }
  // Writes as much as the socket takes. Returns PD3_OK (possibly with bytes left: wait for
  // EPOLLOUT) or PD3_E_UNAVAILABLE.
  int flush(int fd);

 private:
  std::vector<uint8_t> buf_;
  size_t sent_ = 0;
};

}  // namespace pd3
