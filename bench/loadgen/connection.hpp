// connection.hpp — one non-blocking TCP connection to the server: buffered writes of encoded
// requests, reads decoded into reply entries, and the ring of requests awaiting replies.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "byte_buffer.hpp"
#include "codec.hpp"
#include "request.hpp"
#include "common/unique_fd.hpp"

namespace pd3::loadgen {

class Connection;

// Told about every reply entry and every completed request of a connection.
class ConnectionListener {
 public:
  virtual ~ConnectionListener() = default;
  // Entry `index` of the reply to r (index may exceed r.count on a malformed reply).
  virtual void on_entry(Connection& c, Request& r, uint32_t index, const ReplyEntry& e) = 0;
  // r's reply is complete; r has left the ring (room for one more) but stays valid during the call.
  virtual void on_request_done(Connection& c, Request& r) = 0;
};

// Result of an I/O call on a connection.
enum class IoStatus : uint8_t { kOk, kFailed };

// A connected socket with its pipeline.
class Connection final : private EntrySink {
 public:
  Connection(UniqueFd fd, uint32_t id, uint32_t depth, std::unique_ptr<ReplyDecoder> decoder,
             ConnectionListener* listener);

  int fd() const { return fd_.get(); }
  uint32_t id() const { return id_; }
  uint32_t depth() const { return depth_; }
  uint32_t outstanding() const { return ring_.size(); }
  bool has_room() const { return ring_.size() < depth_; }

  // Queue a request: fill next(), encode it into out(), then push().
  Request& next() { return ring_.next(); }
  void push() { ring_.push(); }
  ByteBuffer& out() { return out_; }

  // Sends what is buffered (as much as the socket takes); requests queued since the last call that
  // have no start time get `now`.
  [[nodiscard]] IoStatus flush(uint64_t now);
  bool wants_write() const { return !out_.empty(); }
  // Whether the epoll registration currently asks for EPOLLOUT (kept by the caller).
  bool epollout = false;

  // Reads what is there into `scratch` (shared by every connection) and decodes it.
  [[nodiscard]] IoStatus on_readable(uint8_t* scratch, size_t cap);
  // When the last read returned bytes (the completion time of what it carried).
  uint64_t last_read_ns() const { return last_read_ns_; }

  // Why the connection failed (after kFailed).
  const std::string& failure() const { return failure_; }

 private:
  void on_entry(const ReplyEntry& e) override;
  void on_reply_end() override;
  IoStatus fail(std::string why);

  UniqueFd fd_;
  uint32_t id_;
  uint32_t depth_;
  std::unique_ptr<ReplyDecoder> decoder_;
  ConnectionListener* listener_;
  RequestRing ring_;
  uint64_t unstamped_ = 0;  // ring index of the first request not yet stamped by flush()
  ByteBuffer out_;
  uint64_t last_read_ns_ = 0;
  bool stray_ = false;  // a reply arrived with no request waiting
  std::string failure_;
};

}  // namespace pd3::loadgen
