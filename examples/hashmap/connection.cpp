// connection.cpp — non-blocking socket I/O with compacting buffers.
#include "connection.hpp"

#include <errno.h>
#include <sys/socket.h>

#include <cstddef>

namespace pd3::hashmap {

namespace {

constexpr size_t kReadChunk = 64u << 10;

}  // namespace

IoResult Connection::receive(size_t budget) {
  size_t got = 0;
  while (got < budget) {
    const size_t at = in_.size();
    in_.resize(at + kReadChunk);
    const ssize_t n = ::recv(fd_.get(), in_.data() + at, kReadChunk, 0);
    in_.resize(at + (n > 0 ? size_t(n) : 0));
    if (n > 0) {
      got += size_t(n);
      continue;
    }
    if (n == 0) return IoResult::kPeerClosed;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return IoResult::kOpen;
    return IoResult::kFailed;
  }
  return IoResult::kOpen;
}

void Connection::consume(size_t n) {
  in_start_ += n;
  if (in_start_ == in_.size()) {
    in_.clear();
    in_start_ = 0;
  } else if (in_start_ >= (1u << 20) && in_start_ * 2 >= in_.size()) {
    in_.erase(in_.begin(), in_.begin() + std::ptrdiff_t(in_start_));
    in_start_ = 0;
  }
}

IoResult Connection::send() {
  while (out_start_ < out_.size()) {
    const ssize_t n = ::send(fd_.get(), out_.data() + out_start_, out_.size() - out_start_, MSG_NOSIGNAL);
    if (n > 0) {
      out_start_ += size_t(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (out_start_ >= (1u << 20) && out_start_ * 2 >= out_.size()) {
        out_.erase(out_.begin(), out_.begin() + std::ptrdiff_t(out_start_));
        out_start_ = 0;
      }
      return IoResult::kOpen;
    }
    return IoResult::kFailed;
  }
  out_.clear();
  out_start_ = 0;
  return IoResult::kOpen;
}

}  // namespace pd3::hashmap
