// net.cpp — see net.hpp.
#include "common/net.hpp"
#include "common/tenant_credential.hpp"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <charconv>
#include <cstring>

#include "common/error.hpp"
#include "common/transport_codec.hpp"
#include "pd3/status.h"

namespace pd3 {

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

bool parse_endpoint(std::string_view text, Endpoint* out, bool any_port) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) return false;
  unsigned port = 0;
  const char* first = text.data() + colon + 1;
  const char* last = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(first, last, port);
  if (ec != std::errc() || ptr != last || (port == 0 && !any_port) || port > 65535) return false;
  out->host = std::string(text.substr(0, colon));
  out->port = uint16_t(port);
  return true;
}

bool parse_endpoints(std::string_view text, std::vector<Endpoint>* out) {
  out->clear();
  while (!text.empty()) {
    const size_t comma = text.find(',');
    Endpoint ep;
    if (!parse_endpoint(text.substr(0, comma), &ep)) return false;
    out->push_back(ep);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return !out->empty();
}

int wait_fd(int fd, short events, uint64_t deadline_ns) {
  for (;;) {
    const uint64_t now = now_ns();
    if (now >= deadline_ns) return PD3_E_TIMEOUT;
    pollfd p{fd, events, 0};
    const int ms = int((deadline_ns - now + 999999) / 1000000);
    const int rc = ::poll(&p, 1, ms);
    if (rc > 0) return (p.revents & (POLLERR | POLLNVAL)) && !(p.revents & events) ? PD3_E_UNAVAILABLE : PD3_OK;
    if (rc < 0 && errno != EINTR) return PD3_E_UNAVAILABLE;
  }
}


int tcp_connect(const Endpoint& ep, int timeout_ms, int* fd) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(ep.port);
  if (const int rc = getaddrinfo(ep.host.c_str(), port.c_str(), &hints, &res); rc != 0 || res == nullptr)
    return fail(PD3_E_UNAVAILABLE, "cannot resolve %s: %s", ep.host.c_str(), gai_strerror(rc));
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) {
    freeaddrinfo(res);
    return fail(PD3_E_SYS, "socket: %s", strerror(errno));
  }
  int rc = ::connect(s, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  if (rc != 0 && errno != EINPROGRESS) {
    const int e = errno;
    ::close(s);
    return fail(PD3_E_UNAVAILABLE, "connect %s: %s", ep.str().c_str(), strerror(e));
  }
  if (rc != 0) {
    rc = wait_fd(s, POLLOUT, now_ns() + uint64_t(timeout_ms) * 1000000ull);
    int err = 0;
    socklen_t len = sizeof err;
    if (rc == PD3_OK) getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len);
    if (rc != PD3_OK || err != 0) {
      ::close(s);
      if (rc == PD3_E_TIMEOUT) return fail(PD3_E_TIMEOUT, "connect %s: no answer in %d ms", ep.str().c_str(), timeout_ms);
      return fail(PD3_E_UNAVAILABLE, "connect %s: %s", ep.str().c_str(), strerror(err ? err : ECONNREFUSED));
    }
  }
  const int one = 1;
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  *fd = s;
  return PD3_OK;
}

int send_all(int fd, const uint8_t* buf, size_t len, int timeout_ms) {
  const uint64_t deadline = now_ns() + uint64_t(timeout_ms) * 1000000ull;
  while (len > 0) {
    const ssize_t n = ::send(fd, buf, len, MSG_NOSIGNAL);
    if (n > 0) {
      buf += n;
      len -= size_t(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (const int rc = wait_fd(fd, POLLOUT, deadline)) return rc;
      continue;
    }
    return fail(PD3_E_UNAVAILABLE, "send: %s", strerror(errno));
  }
  return PD3_OK;
}

int client_hello(int fd, std::string_view token, std::string_view tenant, int timeout_ms, pd3_hello_reply* reply,
                 uint16_t flags) {
  std::vector<uint8_t> hello;
  if (!encode_hello(token, tenant, flags, &hello)) {
    if ((flags & ~PD3_HELLO_FLAGS_KNOWN) != 0) return fail(PD3_E_INVAL, "unknown hello flags %#x", unsigned(flags));
    return token.size() > PD3_TOKEN_MAX ? fail(PD3_E_INVAL, "auth token longer than %u bytes", PD3_TOKEN_MAX)
                                        : check_tenant_name("tenant", tenant);
  }
  if (const int rc = send_all(fd, hello.data(), hello.size(), timeout_ms)) return rc;
  const uint64_t deadline = now_ns() + uint64_t(timeout_ms) * 1000000ull;
  FrameReader reader(4096);
  for (;;) {
    pd3_frame f;
    const uint8_t* body = nullptr;
    const int got = reader.next(&f, &body);
    if (got < 0) return got;
    if (got == 1) {
      if (f.kind != PD3_FRAME_HELLO_REPLY) return fail(PD3_E_PROTOCOL, "expected a hello reply, got frame kind %u", f.kind);
      if (reader.buffered() != 0) return fail(PD3_E_PROTOCOL, "bytes after the hello reply");
      return check_hello_reply(body, f.length - sizeof f, reply);
    }
    if (const int rc = wait_fd(fd, POLLIN, deadline)) {
      return rc == PD3_E_TIMEOUT ? fail(PD3_E_TIMEOUT, "no hello reply in %d ms", timeout_ms) : rc;
    }
    if (reader.fill(fd) < 0) return fail(PD3_E_UNAVAILABLE, "connection closed during the hello");
  }
}

// Most bytes one fill() takes, so one busy connection cannot starve the others of an event loop.
constexpr long kMaxFillBytes = 4l << 20;

long FrameReader::fill(int fd) {
  long total = 0;
  for (;;) {
    if (begin_ == end_) begin_ = end_ = 0;
    if (buf_.size() - end_ < 65536) {
      if (begin_ > 0) {  // slide the unread bytes to the front before growing
        std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
      }
      if (buf_.size() - end_ < 65536) buf_.resize(end_ + 262144);
    }
    const size_t space = buf_.size() - end_;
    const ssize_t n = ::recv(fd, buf_.data() + end_, space, 0);
    if (n > 0) {
      end_ += size_t(n);
      total += n;
      if (size_t(n) < space) return total;  // a short read: the socket is drained for now
      if (total >= kMaxFillBytes) return total;  // let other connections have their turn
      continue;
    }
    if (n == 0) return PD3_E_UNAVAILABLE;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return total;
    return PD3_E_UNAVAILABLE;
  }
}

int FrameReader::next(pd3_frame* hdr, const uint8_t** body) {
  const size_t have = end_ - begin_;
  if (have < sizeof(pd3_frame)) return 0;
  std::memcpy(hdr, buf_.data() + begin_, sizeof *hdr);
  if (const int rc = check_frame_header(*hdr, max_frame_)) return rc;
  if (have < hdr->length) {
    if (buf_.size() - begin_ < hdr->length) {  // make room for the whole frame
      std::memmove(buf_.data(), buf_.data() + begin_, have);
      begin_ = 0;
      end_ = have;
      if (buf_.size() < hdr->length) buf_.resize(hdr->length);
    }
    return 0;
  }
  *body = buf_.data() + begin_ + sizeof *hdr;
  begin_ += hdr->length;
  return 1;
}

int OutBuffer::flush(int fd) {
  while (sent_ < buf_.size()) {
    const ssize_t n = ::send(fd, buf_.data() + sent_, buf_.size() - sent_, MSG_NOSIGNAL);
    if (n > 0) {
      sent_ += size_t(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return PD3_OK;
    return PD3_E_UNAVAILABLE;
  }
  buf_.clear();
  sent_ = 0;
  return PD3_OK;
}

}  // namespace pd3
