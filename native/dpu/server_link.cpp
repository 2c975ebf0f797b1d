// server_link.cpp — see server_link.hpp.
#include "dpu/server_link.hpp"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "common/error.hpp"
#include "common/transport_codec.hpp"
#include "pd3/status.h"

namespace pd3 {

namespace {

constexpr size_t kSpareBuffers = 4;  // sent frame buffers kept for reuse

unsigned long long ms_of(uint64_t ns) { return (unsigned long long)(ns / 1000000); }

}  // namespace

ServerLink::ServerLink(const Endpoint& endpoint, uint32_t index, int epoll_fd, const LinkOptions& options)
    : endpoint_(endpoint), index_(index), epoll_fd_(epoll_fd), options_(options) {}

int ServerLink::resolve() {
  address_ = sockaddr_in{};
  address_.sin_family = AF_INET;
  address_.sin_port = htons(endpoint_.port);
  if (inet_pton(AF_INET, endpoint_.host.c_str(), &address_.sin_addr) == 1) {
    resolved_ = true;
    return PD3_OK;
  }
  // A name: resolved once (getaddrinfo blocks), then the address is kept across reconnects.
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(endpoint_.host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr)
    return fail(PD3_E_UNAVAILABLE, "cannot resolve %s: %s", endpoint_.host.c_str(), gai_strerror(rc));
  address_.sin_addr = reinterpret_cast<const sockaddr_in*>(res->ai_addr)->sin_addr;
  freeaddrinfo(res);
  resolved_ = true;
  return PD3_OK;
}

void ServerLink::update_interest() {
  if (!fd_.valid()) return;
  uint32_t want = EPOLLOUT;  // kConnecting: wait for the connect to finish
  if (state_ == LinkState::kHello || state_ == LinkState::kUp) want = EPOLLIN | (outgoing_.empty() ? 0u : EPOLLOUT);
  if (want == interest_) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.u32 = index_;
  epoll_ctl(epoll_fd_, interest_ == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd_.get(), &ev);
  interest_ = want;
}

int ServerLink::connect_if_due(uint64_t now) {
  if (state_ != LinkState::kDown || now < retry_at_) return PD3_OK;
  retry_at_ = now + options_.reconnect_ns;
  if (!resolved_)
    if (const int rc = resolve()) return rc;
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) return fail(PD3_E_SYS, "socket: %s", strerror(errno));
  fd_.reset(s);
  interest_ = 0;
  deadline_ = now + options_.connect_timeout_ns;
  state_ = LinkState::kConnecting;
  if (::connect(s, reinterpret_cast<const sockaddr*>(&address_), sizeof address_) == 0) return on_connected();
  if (errno != EINPROGRESS) return fail(PD3_E_UNAVAILABLE, "connect %s: %s", endpoint_.str().c_str(), strerror(errno));
  update_interest();
  return PD3_OK;
}

int ServerLink::on_connected() {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err != 0) return fail(PD3_E_UNAVAILABLE, "connect %s: %s", endpoint_.str().c_str(), strerror(err));
  const int one = 1;
  setsockopt(fd_.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  std::vector<uint8_t> hello;
  // Any order: a frame whose response waits for the disk (a write under --sync batch) does not hold
  // back the reads and prefetches sent after it.
  if (!encode_hello(options_.token, options_.tenant, PD3_HELLO_ANY_ORDER, &hello))
    return fail(PD3_E_INVAL, "auth token longer than %u bytes, or a bad tenant name", PD3_TOKEN_MAX);
  outgoing_.push_back(Outgoing{std::move(hello), 0});
  state_ = LinkState::kHello;
  return write_out();
}

int ServerLink::on_hello_reply() {
  if (hello_reader_.fill(fd_.get()) < 0)
    return fail(PD3_E_UNAVAILABLE, "%s closed the connection during the hello", endpoint_.str().c_str());
  pd3_frame f;
  const uint8_t* body = nullptr;
  const int got = hello_reader_.next(&f, &body);
  if (got <= 0) return got;  // 0: more bytes needed; < 0: malformed header (reason already set)
  if (f.kind != PD3_FRAME_HELLO_REPLY)
    return fail(PD3_E_PROTOCOL, "%s answered the hello with frame kind %u", endpoint_.str().c_str(), unsigned(f.kind));
  if (hello_reader_.buffered() != 0)
    return fail(PD3_E_PROTOCOL, "%s sent bytes after its hello reply", endpoint_.str().c_str());
  pd3_hello_reply reply;
  if (const int rc = check_hello_reply(body, f.length - sizeof f, &reply)) return rc;
  if (reply.max_frame < sizeof(pd3_frame) + sizeof(pd3_request))
    return fail(PD3_E_PROTOCOL, "%s accepts frames of %u bytes at most", endpoint_.str().c_str(), reply.max_frame);
  server_id_ = reply.server_id;
  capacity_ = reply.capacity;
  free_bytes_ = std::min(reply.free_bytes, reply.capacity);
  max_frame_ = std::min<uint32_t>(reply.max_frame, PD3_FRAME_MAX_LIMIT);
  any_order_ = (reply.flags & PD3_HELLO_ANY_ORDER) != 0;
  hello_reader_ = FrameReader(4096);
  state_ = LinkState::kUp;
  update_interest();
  return PD3_OK;
}

int ServerLink::on_events(uint32_t events, std::vector<ReceivedFrame>* out) {
  const bool readable = events & (EPOLLIN | EPOLLERR | EPOLLHUP);
  switch (state_) {
    case LinkState::kDown:
      return PD3_OK;  // an event queued before the link was closed
    case LinkState::kConnecting:
      return events & (EPOLLOUT | EPOLLERR | EPOLLHUP) ? on_connected() : PD3_OK;
    case LinkState::kHello:
      if (events & EPOLLOUT)
        if (const int rc = write_out()) return rc;
      return readable ? on_hello_reply() : PD3_OK;
    case LinkState::kUp:
      if (events & EPOLLOUT)
        if (const int rc = write_out()) return rc;
      return readable ? receive(out) : PD3_OK;
  }
  return PD3_OK;
}

ServerLink::InflightFrame* ServerLink::match_response(const pd3_frame& h) {
  InflightFrame* f = &inflight_.front();
  if (any_order_) {
    const auto it = std::find_if(inflight_.begin(), inflight_.end(), [&](const InflightFrame& g) { return g.seq == h.seq; });
    if (it == inflight_.end()) {
      fail(PD3_E_PROTOCOL, "%s answered batch %llu, which is not in flight", endpoint_.str().c_str(),
           (unsigned long long)h.seq);
      return nullptr;
    }
    f = &*it;
  } else if (h.seq != f->seq) {
    fail(PD3_E_PROTOCOL, "%s answered batch %llu, expected %llu", endpoint_.str().c_str(), (unsigned long long)h.seq,
         (unsigned long long)f->seq);
    return nullptr;
  }
  const uint32_t reserved = uint32_t(std::min<uint64_t>(f->space.len, PD3_FRAME_MAX_LIMIT));
  if (check_frame_header(h, reserved) != PD3_OK) {
    fail(PD3_E_PROTOCOL, "%s: response frame of %u bytes, kind %u, flags %#x does not fit the %u reserved",
         endpoint_.str().c_str(), h.length, unsigned(h.kind), unsigned(h.flags), reserved);
    return nullptr;
  }
  if (h.kind != PD3_FRAME_RESPONSE) {
    fail(PD3_E_PROTOCOL, "%s sent frame kind %u, expected a response", endpoint_.str().c_str(), unsigned(h.kind));
    return nullptr;
  }
  if (h.count != f->records.size()) {
    fail(PD3_E_PROTOCOL, "%s answered %u records of a batch of %zu", endpoint_.str().c_str(), h.count,
         f->records.size());
    return nullptr;
  }
  return f;
}

int ServerLink::receive(std::vector<ReceivedFrame>* out) {
  for (;;) {
    uint8_t probe;
    uint8_t* into = &probe;
    uint64_t want = 1;  // nothing in flight: any byte is one no request asked for
    if (receiving_ != nullptr) {
      into = receiving_->space.data + received_;
      want = frame_len_ - received_;
    } else if (!inflight_.empty()) {
      into = reinterpret_cast<uint8_t*>(&header_) + received_;
      want = sizeof header_ - received_;
    }
    const ssize_t n = ::recv(fd_.get(), into, want, 0);
    if (n == 0) return fail(PD3_E_UNAVAILABLE, "%s closed the connection", endpoint_.str().c_str());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return PD3_OK;
      return fail(PD3_E_UNAVAILABLE, "recv from %s: %s", endpoint_.str().c_str(), strerror(errno));
    }
    bytes_received_ += uint64_t(n);
    if (inflight_.empty()) return fail(PD3_E_PROTOCOL, "%s sent bytes no request asked for", endpoint_.str().c_str());
    received_ += uint64_t(n);
    if (receiving_ == nullptr) {
      if (received_ < sizeof header_) continue;
      receiving_ = match_response(header_);
      if (receiving_ == nullptr) return PD3_E_PROTOCOL;
      std::memcpy(receiving_->space.data, &header_, sizeof header_);
      frame_len_ = header_.length;
    }
    if (received_ < frame_len_) continue;
    InflightFrame& f = *receiving_;
    const uint8_t* body = f.space.data + sizeof(pd3_frame);
    const uint32_t body_len = uint32_t(frame_len_ - sizeof(pd3_frame));
    if (validate_responses(body, body_len, uint32_t(f.records.size())) != PD3_OK)
      return fail(PD3_E_PROTOCOL, "%s: malformed response frame: %s", endpoint_.str().c_str(), pd3_last_error());
    inflight_records_ -= f.records.size();
    out->push_back(ReceivedFrame{std::move(f.records), f.space, body, body_len});
    inflight_.erase(std::find_if(inflight_.begin(), inflight_.end(), [&](const InflightFrame& g) { return &g == &f; }));
    receiving_ = nullptr;
    received_ = frame_len_ = 0;
  }
}

int ServerLink::check_deadlines(uint64_t now) const {
  if ((state_ == LinkState::kConnecting || state_ == LinkState::kHello) && now >= deadline_)
    return fail(PD3_E_TIMEOUT, "%s: no %s within %llu ms", endpoint_.str().c_str(),
                state_ == LinkState::kConnecting ? "connection" : "hello reply", ms_of(options_.connect_timeout_ns));
  if (state_ == LinkState::kUp && !inflight_.empty() && now - inflight_.front().sent_ns >= options_.request_timeout_ns)
    return fail(PD3_E_TIMEOUT, "%s answered nothing for %llu ms", endpoint_.str().c_str(),
                ms_of(options_.request_timeout_ns));
  return PD3_OK;
}

void ServerLink::close(uint64_t now, ResponseBuffer& buffer, std::vector<LinkRecord>* orphans) {
  if (fd_.valid() && interest_ != 0) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd_.get(), nullptr);
  fd_.reset();
  interest_ = 0;
  for (InflightFrame& f : inflight_) {
    orphans->insert(orphans->end(), f.records.begin(), f.records.end());
    buffer.release(f.space.ticket);
  }
  for (PendingFrame& f : unsent_) orphans->insert(orphans->end(), f.records.begin(), f.records.end());
  inflight_.clear();
  unsent_.clear();
  outgoing_.clear();
  unsent_records_ = inflight_records_ = 0;
  unsent_bytes_ = received_ = frame_len_ = 0;
  receiving_ = nullptr;
  any_order_ = false;
  hello_reader_ = FrameReader(4096);
  state_ = LinkState::kDown;
  retry_at_ = now + options_.reconnect_ns;
}

uint64_t ServerLink::frame_limit() const { return std::min<uint64_t>(options_.max_batch_bytes, max_frame_); }

bool ServerLink::fits(uint32_t record_len, uint64_t space) const {
  return sizeof(pd3_frame) + uint64_t(record_len) <= max_frame_ &&
         sizeof(pd3_frame) + space <= options_.response_buffer_bytes;
}

bool ServerLink::frame_full(const PendingFrame& f) const {
  return f.records.size() >= options_.max_batch_records || f.bytes.size() >= frame_limit() ||
         f.response_bytes >= options_.frame_response_cap;
}

void ServerLink::start_frame(uint64_t now) {
  std::vector<uint8_t> bytes;
  if (!spare_.empty()) {
    bytes = std::move(spare_.back());
    spare_.pop_back();
  }
  bytes.assign(sizeof(pd3_frame), 0);  // the header, written when the frame is sent
  unsent_.push_back(PendingFrame{std::move(bytes), {}, sizeof(pd3_frame), now});
}

void ServerLink::add(const uint8_t* record, uint32_t record_len, const LinkRecord& meta, uint64_t now) {
  const bool start = unsent_.empty() || frame_full(unsent_.back()) ||
                     (!unsent_.back().records.empty() &&
                      (unsent_.back().bytes.size() + record_len > frame_limit() ||
                       unsent_.back().response_bytes + meta.space > options_.frame_response_cap));
  if (start) start_frame(now);
  PendingFrame& f = unsent_.back();
  f.bytes.insert(f.bytes.end(), record, record + record_len);
  f.records.push_back(meta);
  f.response_bytes += meta.space;
  ++unsent_records_;
  unsent_bytes_ += record_len;
}

int ServerLink::dispatch(uint64_t now, ResponseBuffer& buffer) {
  while (up() && !unsent_.empty() && inflight_.size() < options_.max_outstanding) {
    PendingFrame& f = unsent_.front();
    if (f.records.empty()) break;
    const bool due = unsent_.size() > 1 || frame_full(f) || now - f.first_ns >= options_.batch_delay_ns;
    if (!due) break;
    ResponseSpace space;
    if (!buffer.reserve(f.response_bytes, &space)) break;  // no room yet: the frame waits, in order
    const uint32_t count = uint32_t(f.records.size());
    const pd3_frame h{uint32_t(f.bytes.size()), PD3_FRAME_REQUEST, 0, count, 0, next_seq_};
    std::memcpy(f.bytes.data(), &h, sizeof h);
    unsent_records_ -= count;
    unsent_bytes_ -= f.bytes.size() - sizeof(pd3_frame);
    inflight_records_ += count;
    inflight_.push_back(InflightFrame{next_seq_++, std::move(f.records), space, now});
    outgoing_.push_back(Outgoing{std::move(f.bytes), 0});
    ++frames_sent_;
    unsent_.pop_front();
  }
  return outgoing_.empty() ? PD3_OK : write_out();
}

int ServerLink::write_out() {
  while (!outgoing_.empty()) {
    Outgoing& o = outgoing_.front();
    const ssize_t n = ::send(fd_.get(), o.bytes.data() + o.sent, o.bytes.size() - o.sent, MSG_NOSIGNAL);
    if (n > 0) {
      o.sent += size_t(n);
      bytes_sent_ += uint64_t(n);
      if (o.sent == o.bytes.size()) {
        if (spare_.size() < kSpareBuffers) spare_.push_back(std::move(o.bytes));
        outgoing_.pop_front();
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;  // EPOLLOUT resumes it
    return fail(PD3_E_UNAVAILABLE, "send to %s: %s", endpoint_.str().c_str(), strerror(errno));
  }
  update_interest();
  return PD3_OK;
}

bool ServerLink::backlogged() const {
  return unsent_records_ >= 2ull * options_.max_batch_records || unsent_bytes_ >= 2ull * options_.max_batch_bytes;
}

uint64_t ServerLink::next_deadline(uint64_t now) const {
  switch (state_) {
    case LinkState::kDown:
      return retry_at_;
    case LinkState::kConnecting:
    case LinkState::kHello:
      return deadline_;
    case LinkState::kUp:
      break;
  }
  uint64_t due = UINT64_MAX;
  if (!inflight_.empty()) due = inflight_.front().sent_ns + options_.request_timeout_ns;
  // A batch delay still running; one that ran out and still waits is held by the response buffer,
  // which frees up only when responses are published or arrive (socket readiness wakes us then).
  if (!unsent_.empty() && unsent_.front().first_ns + options_.batch_delay_ns > now)
    due = std::min(due, unsent_.front().first_ns + options_.batch_delay_ns);
  return due;
}

}  // namespace pd3
