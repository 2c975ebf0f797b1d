// connection.cpp — send/recv on one socket; replies are matched to requests in order.
#include "connection.hpp"

#include <errno.h>
#include <sys/socket.h>

#include <cstring>

#include "common/net.hpp"

namespace pd3::loadgen {

Connection::Connection(UniqueFd fd, uint32_t id, uint32_t depth, std::unique_ptr<ReplyDecoder> decoder,
                       ConnectionListener* listener)
    : fd_(std::move(fd)), id_(id), depth_(depth), decoder_(std::move(decoder)), listener_(listener), ring_(depth + 1) {}

IoStatus Connection::fail(std::string why) {
  if (failure_.empty()) failure_ = std::move(why);
  return IoStatus::kFailed;
}

IoStatus Connection::flush(uint64_t now) {
  for (; unstamped_ < ring_.tail_index(); ++unstamped_) {
    Request& r = ring_.at(unstamped_);
    if (r.start_ns == 0) r.start_ns = now;
  }
  while (!out_.empty()) {
    const ssize_t n = ::send(fd_.get(), out_.data(), out_.size(), MSG_NOSIGNAL);
    if (n > 0) {
      out_.consume(size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return IoStatus::kOk;
    return fail(std::string("send: ") + std::strerror(errno));
  }
  return IoStatus::kOk;
}

IoStatus Connection::on_readable(uint8_t* scratch, size_t cap) {
  for (;;) {
    const ssize_t n = ::recv(fd_.get(), scratch, cap, 0);
    if (n > 0) {
      last_read_ns_ = now_ns();
      if (!decoder_->feed(scratch, size_t(n), *this)) return fail("bad reply from the server: " + decoder_->error());
      if (stray_) return fail("the server sent a reply to no request");
      if (size_t(n) < cap) return IoStatus::kOk;  // drained; level-triggered epoll reports more later
      continue;
    }
    if (n == 0) {
      return fail(ring_.empty() ? "closed by the server"
                                : "closed by the server with " + std::to_string(ring_.size()) + " requests unanswered");
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return IoStatus::kOk;
    return fail(std::string("recv: ") + std::strerror(errno));
  }
}

void Connection::on_entry(const ReplyEntry& e) {
  if (ring_.empty()) {
    stray_ = true;
    return;
  }
  Request& r = ring_.front();
  listener_->on_entry(*this, r, r.entries++, e);
}

void Connection::on_reply_end() {
  if (ring_.empty()) {
    stray_ = true;
    return;
  }
  // Popped first so the listener can queue the next request (the ring has a spare slot: the popped
  // one is not reused before the listener returns).
  Request& r = ring_.front();
  ring_.pop();
  listener_->on_request_done(*this, r);
}

}  // namespace pd3::loadgen
