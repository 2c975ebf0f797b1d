// connection.cpp — see connection.hpp.
#include "memserver/connection.hpp"

#include <sys/epoll.h>

#include <algorithm>
#include <bit>
#include <string>

#include "common/error.hpp"
#include "common/transport_codec.hpp"
#include "memserver/tcp_server.hpp"
#include "pd3/status.h"

namespace pd3 {

namespace {

// An idle connection keeps at most this much send-buffer capacity (a burst of large reads
// should not pin its high-water mark for the connection's lifetime).
constexpr size_t kIdleOutputCapacity = 8u << 20;

// The answer to a record that was not run because its response would not fit in the frame.
void answer_too_big(const TransportRequest& req, FrameBuilder* b) {
  if (req.op() == PD3_OP_PREFETCH)
    b->prefetch_response(req.op_id, PD3_E_TOO_BIG, req.data, uint16_t(req.data_len), 0, nullptr, 0);
  else
    b->response(req.op_id, PD3_E_TOO_BIG, 0, nullptr, 0);
}

}  // namespace

size_t batch_bucket(uint32_t records) {
  if (records <= 1) return 0;
  return std::min<size_t>(kBatchBuckets - 1, size_t(std::bit_width(records - 1)));
}

Connection::Connection(const ConnectionContext& ctx, uint64_t id, UniqueFd fd, std::string peer,
                       uint64_t hello_deadline_ns)
    : ctx_(ctx),
      id_(id),
      fd_(std::move(fd)),
      peer_(std::move(peer)),
      hello_deadline_ns_(hello_deadline_ns),
      in_(ctx.options.max_frame) {}

bool Connection::reading() const {
  return (phase_ == Phase::kHello || phase_ == Phase::kServing) && !peer_done_ && !paused_ && !parked_;
}

uint32_t Connection::interest() const {
  return (reading() ? uint32_t(EPOLLIN) : 0u) | (out_.empty() ? 0u : uint32_t(EPOLLOUT));
}

void Connection::handle(uint32_t events) {
  if (reading() && (events & (EPOLLIN | EPOLLHUP | EPOLLERR))) read_input();
  pump();
  // Both directions are gone (or the socket failed): nothing more can be received or delivered.
  if (open() && (events & (EPOLLHUP | EPOLLERR))) close("connection reset");
}

void Connection::read_input() {
  const size_t before = in_.buffered();
  const long got = in_.fill(fd_.get());
  ctx_.stats.bytes_in += in_.buffered() - before;
  if (got < 0) peer_done_ = true;
}

void Connection::pump() {
  const uint64_t limit = ctx_.options.max_output_bytes;
  for (;;) {
    if (!release_held()) return;
    const bool over_limit = !paused_ && execute_buffered();
    if (!open() || !flush()) return;
    if (paused_) {
      // Resume at half the limit, so a reader just keeping up does not flip the pause every write.
      if (unsent() > limit / 2) break;
      paused_ = false;
      continue;  // frames may be waiting in the receive buffer
    }
    if (!over_limit) break;
    if (unsent() > limit) {  // the socket (or the disk) did not take enough: stop reading until it drains
      paused_ = true;
      ++ctx_.stats.read_pauses;
      break;
    }
  }
  if (peer_done_ && !paused_ && !parked_) end_of_input();
}

bool Connection::resume() {
  if (!parked()) return false;
  const uint64_t frames = frames_;
  const uint32_t next = frame_.next;
  pump();
  return frames_ != frames || frame_.next != next || !open();
}

bool Connection::execute_buffered() {
  if (parked_) {
    if (!run_frame()) return false;
    if (unsent() > ctx_.options.max_output_bytes) return true;
  }
  while (phase_ == Phase::kHello || phase_ == Phase::kServing) {
    pd3_frame hdr;
    const uint8_t* body = nullptr;
    const int got = in_.next(&hdr, &body);
    if (got == 0) return false;
    if (got < 0) {
      const std::string why = pd3_last_error();
      if (phase_ == Phase::kHello) {
        ++ctx_.stats.protocol_errors;
        refuse(why.c_str());
      } else {
        protocol_error(why.c_str());
      }
      return false;
    }
    const bool ok = phase_ == Phase::kHello ? on_hello(hdr, body) : on_request(hdr, body);
    if (!ok) return false;
    if (unsent() > ctx_.options.max_output_bytes) return true;
  }
  return false;
}

bool Connection::on_hello(const pd3_frame& hdr, const uint8_t* body) {
  if (hdr.kind != PD3_FRAME_HELLO) {
    ++ctx_.stats.protocol_errors;
    const std::string why = "expected a hello, got frame kind " + std::to_string(hdr.kind);
    refuse(why.c_str());
    return false;
  }
  std::string tenant;
  uint16_t flags = 0;
  const int rc = hdr.count != 0 ? fail(PD3_E_PROTOCOL, "hello frame with count %u", hdr.count)
                                : check_hello(body, hdr.length - sizeof hdr, ctx_.options.token, &tenant, &flags);
  pd3_hello_reply reply{};
  reply.version = PD3_TRANSPORT_VERSION;
  if (rc != PD3_OK) {  // a refused client learns the status and our version, nothing about the store
    const std::string why = pd3_last_error();
    ++(rc == PD3_E_AUTH ? ctx_.stats.auth_failures : ctx_.stats.protocol_errors);
    reply.status = uint16_t(-rc);
    encode_hello_reply(reply, &out_.bytes());
    flush();  // one attempt: the reply is tiny and the send buffer of a new connection is empty
    refuse(why.c_str());
    return false;
  }
  reply.server_id = ctx_.store.server_id();
  reply.max_frame = ctx_.options.max_frame;
  reply.capacity = ctx_.store.capacity();
  reply.free_bytes = ctx_.store.free_bytes();
  reply.flags = flags;  // every known flag is honoured
  encode_hello_reply(reply, &out_.bytes());
  held_.set_any_order((flags & PD3_HELLO_ANY_ORDER) != 0);
  tenant_ = Tenant::named(tenant);
  if (!tenant.empty())
    ctx_.log.log(LogLevel::kInfo, "conn.tenant", "conn %llu %s: tenant %s", (unsigned long long)id_, peer_.c_str(),
                 tenant.c_str());
  phase_ = Phase::kServing;
  return true;
}

bool Connection::on_request(const pd3_frame& hdr, const uint8_t* body) {
  if (hdr.kind != PD3_FRAME_REQUEST) {
    const std::string why = "frame kind " + std::to_string(hdr.kind) + " after the hello, expected REQUEST";
    protocol_error(why.c_str());
    return false;
  }
  const size_t len = hdr.length - sizeof hdr;
  if (validate_requests(body, len, hdr.count) != PD3_OK) {
    const std::string why = pd3_last_error();
    protocol_error(why.c_str());
    return false;
  }
  frame_.hdr = hdr;
  frame_.body = body;
  frame_.len = len;
  frame_.pos = 0;
  frame_.next = 0;
  frame_.budget = ctx_.options.max_frame - sizeof(pd3_frame);
  frame_.partial.clear();
  frame_.answered = 0;
  pins_.touched = {};
  if (!held_.empty()) ++ctx_.stats.frames_behind_sync;
  return run_frame();
}

bool Connection::run_frame() {
  std::vector<uint8_t>& bytes = out_.bytes();
  const size_t start = bytes.size();
  FrameBuilder b(&bytes);
  b.begin(PD3_FRAME_RESPONSE, frame_.hdr.seq);
  const size_t records_start = bytes.size();
  if (frame_.answered != 0) b.raw(frame_.partial.data(), frame_.partial.size(), frame_.answered);
  // When a record runs, the warm_ahead records after it have had their bytes hinted into the cache
  // (MemStore::warm): small records at random offsets of a large region would otherwise each wait
  // for DRAM in turn, where the hints let those waits overlap.
  uint32_t warm_next = frame_.next;
  size_t warm_pos = frame_.pos;
  const uint32_t warm_ahead = ctx_.options.warm_ahead;
  for (; frame_.next < frame_.hdr.count; ++frame_.next) {
    for (; warm_ahead != 0 && warm_next < frame_.hdr.count && warm_next - frame_.next <= warm_ahead; ++warm_next) {
      TransportRequest ahead;
      decode_request(frame_.body + warm_pos, frame_.len - warm_pos, &ahead);  // cannot fail: as below
      ctx_.store.warm(ahead);
      warm_pos += ahead.record_len;
    }
    TransportRequest req;
    decode_request(frame_.body + frame_.pos, frame_.len - frame_.pos, &req);  // cannot fail: validated whole
    const uint64_t need = response_space(req);
    if (need <= frame_.budget) {
      const int ready = ctx_.store.prepare(req, tenant_, &pins_);
      if (ready == tier::kWait) {  // park: keep what is answered, send nothing of the frame yet
        frame_.partial.assign(bytes.begin() + ptrdiff_t(records_start), bytes.end());
        frame_.answered = b.records();
        bytes.resize(start);
        parked_ = true;
        return false;
      }
      frame_.budget -= need;
      if (ready == tier::kReady)
        ctx_.store.execute(req, tenant_, &b);
      else
        ctx_.store.fail_request(req, ready, &b);
      ctx_.store.release(&pins_);
    } else {
      answer_too_big(req, &b);
      ++ctx_.stats.too_big_records;
    }
    frame_.pos += req.record_len;
  }
  parked_ = false;
  return finish_frame(b, start);
}

bool Connection::finish_frame(FrameBuilder& b, size_t start) {
  std::vector<uint8_t>& bytes = out_.bytes();
  uint64_t ticket = 0;
  if (ctx_.store.begin_sync(pins_.touched, &ticket) != PD3_OK) {
    const std::string why = pd3_last_error();
    bytes.resize(start);
    sync_failed(frame_.hdr.seq, held_.size() + 1, why.c_str());
    return false;
  }
  b.finish();
  if (!held_.must_hold(ticket)) {
    count_frame(frame_.hdr.count);
    return true;
  }
  held_.hold(ticket, frame_.hdr.seq, frame_.hdr.count, std::vector<uint8_t>(bytes.begin() + ptrdiff_t(start), bytes.end()));
  bytes.resize(start);
  return true;
}

bool Connection::release_held() {
  uint64_t failed_seq = 0;
  const int status =
      held_.release(ctx_.store, &out_.bytes(), [this](uint32_t records) { count_frame(records); }, &failed_seq);
  if (status == PD3_OK) return true;
  const std::string why = pd3_last_error();
  sync_failed(failed_seq, held_.size(), why.c_str());
  return false;
}

void Connection::count_frame(uint32_t records) {
  ++frames_;
  ++ctx_.stats.frames;
  ctx_.stats.records += records;
  ++ctx_.histogram[batch_bucket(records)];
}

void Connection::sync_failed(uint64_t seq, size_t unacknowledged, const char* why) {
  ++ctx_.stats.sync_failures;
  ctx_.log.log(LogLevel::kError, "store.sync_failed",
               "conn %llu %s: frame seq %llu not acknowledged (%zu frames unanswered in all): %s",
               (unsigned long long)id_, peer_.c_str(), (unsigned long long)seq, unacknowledged, why);
  close("store sync failed");
}

bool Connection::flush() {
  if (out_.empty()) return true;
  const size_t before = out_.pending();
  const int rc = out_.flush(fd_.get());
  ctx_.stats.bytes_out += before - out_.pending();
  if (rc != PD3_OK) {
    close("send failed (peer gone)");
    return false;
  }
  if (out_.empty() && out_.bytes().capacity() > kIdleOutputCapacity) out_.bytes().shrink_to_fit();
  return true;
}

void Connection::end_of_input() {
  if (phase_ == Phase::kDraining) {
    if (out_.empty() && held_.empty()) close("peer closed");
    return;
  }
  if (!open()) return;
  if (phase_ == Phase::kHello) {
    close(in_.buffered() ? "peer closed in the middle of its hello" : "peer closed before its hello");
    return;
  }
  if (in_.buffered() != 0) {
    const std::string why = "peer closed in the middle of a frame (" + std::to_string(in_.buffered()) +
                            " bytes of it unread)";
    close(why.c_str());
    return;
  }
  phase_ = Phase::kDraining;
  if (out_.empty() && held_.empty()) close("peer closed");
}

void Connection::expire_hello(uint64_t now_ns) {
  if (phase_ != Phase::kHello || now_ns < hello_deadline_ns_) return;
  ++ctx_.stats.hello_timeouts;
  const std::string why = "no hello within " + std::to_string(ctx_.options.hello_timeout_ms) + " ms";
  refuse(why.c_str());
}

void Connection::refuse(const char* reason) {
  ctx_.log.log(LogLevel::kWarn, "conn.refused", "conn %llu %s: %s", (unsigned long long)id_, peer_.c_str(), reason);
  close("refused");
}

void Connection::protocol_error(const char* reason) {
  ++ctx_.stats.protocol_errors;
  ctx_.log.log(LogLevel::kWarn, "conn.protocol_error", "conn %llu %s: %s", (unsigned long long)id_, peer_.c_str(),
               reason);
  close("protocol error");
}

void Connection::close(const char* reason) {
  if (!open()) return;
  phase_ = Phase::kClosed;
  ctx_.store.release(&pins_);
  parked_ = false;
  held_.clear();
  ctx_.log.log(LogLevel::kInfo, "conn.close", "conn %llu %s closed after %llu frames: %s", (unsigned long long)id_,
               peer_.c_str(), (unsigned long long)frames_, reason);
  fd_.reset();
}

}  // namespace pd3
