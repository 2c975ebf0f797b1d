// connection.hpp — one client connection: its socket, the bytes received and not yet parsed, and
// the responses not yet sent. Owned by one worker thread.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

namespace pd3::hashmap {

// A socket closed when its owner goes away.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// What reading or writing a connection's socket found.
enum class IoResult { kOpen, kPeerClosed, kFailed };

// A client connection's socket and buffers.
class Connection {
 public:
  Connection(UniqueFd fd, std::string peer) : fd_(std::move(fd)), peer_(std::move(peer)) {}

  int fd() const { return fd_.get(); }
  const std::string& peer() const { return peer_; }

  // Reads what the socket has (at most `budget` bytes) into the input buffer.
  IoResult receive(size_t budget);
  // Writes what the socket takes from the output buffer.
  IoResult send();

  // Unparsed input; drop `n` bytes once parsed.
  const uint8_t* input() const { return in_.data() + in_start_; }
  size_t input_size() const { return in_.size() - in_start_; }
  void consume(size_t n);

  std::vector<uint8_t>& output() { return out_; }
  size_t output_pending() const { return out_.size() - out_start_; }

  // Whether the worker currently asks epoll for EPOLLIN / EPOLLOUT.
  bool want_read = true;
  bool want_write = false;

 private:
  UniqueFd fd_;
  std::string peer_;
  std::vector<uint8_t> in_;
  size_t in_start_ = 0;
  std::vector<uint8_t> out_;
  size_t out_start_ = 0;
};

}  // namespace pd3::hashmap
