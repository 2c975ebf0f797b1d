// client_connection.cpp — pipelining, response framing checks, expectation checks.
#include "client_connection.hpp"

#include <errno.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace pd3::hashmap {

namespace {

constexpr size_t kReadChunk = 64u << 10;
constexpr uint64_t kMaxReportedMismatches = 10;

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

const char* op_name(uint8_t op) { return op == PD3_BIN_GET ? "GET" : op == PD3_BIN_PUT ? "PUT" : "DEL"; }

}  // namespace

void ClientResult::merge(const ClientResult& o) {
  requests += o.requests;
  entries += o.entries;
  not_found += o.not_found;
  errors += o.errors;
  verified += o.verified;
  mismatches += o.mismatches;
  broken += o.broken;
  latency.merge(o.latency);
}

ClientConnection::ClientConnection(int fd, std::unique_ptr<RequestSource> source, uint32_t depth, ClientResult* result)
    : fd_(fd), source_(std::move(source)), depth_(depth), result_(result) {}

ClientConnection::~ClientConnection() { ::close(fd_); }

bool ClientConnection::fail(const std::string& why) {
  if (!failed_) {
    std::fprintf(stderr, "pd3_hashmap_client: connection failed: %s\n", why.c_str());
    ++result_->broken;
  }
  failed_ = true;
  return false;
}

bool ClientConnection::pump() {
  if (failed_) return false;
  while (!exhausted_ && inflight_.size() < depth_) {
    if (!source_->next(&planned_)) {
      exhausted_ = true;
      break;
    }
    encode_request(planned_.op, planned_.keys.data(), planned_.values.data(), uint16_t(planned_.keys.size()), &out_);
    inflight_.push_back({now_ns(), planned_.op, uint16_t(planned_.keys.size()), planned_.keys, planned_.expect});
  }
  while (out_start_ < out_.size()) {
    const ssize_t n = ::send(fd_, out_.data() + out_start_, out_.size() - out_start_, MSG_NOSIGNAL);
    if (n > 0) {
      out_start_ += size_t(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return fail(std::string("send: ") + std::strerror(errno));
  }
  out_.clear();
  out_start_ = 0;
  return true;
}

bool ClientConnection::on_readable() {
  if (failed_) return false;
  for (;;) {
    const size_t at = in_.size();
    in_.resize(at + kReadChunk);
    const ssize_t n = ::recv(fd_, in_.data() + at, kReadChunk, 0);
    in_.resize(at + (n > 0 ? size_t(n) : 0));
    if (n > 0) continue;
    if (n == 0) {
      parse();
      return inflight_.empty() ? fail("closed by the server") : fail("closed by the server with requests unanswered");
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    return fail(std::string("recv: ") + std::strerror(errno));
  }
  return parse();
}

void ClientConnection::check(const InFlight& r, uint16_t i, EntryStatus status, uint64_t value) {
  ++result_->entries;
  if (status == EntryStatus::kNotFound) ++result_->not_found;
  else if (status != EntryStatus::kOk) ++result_->errors;
  if (r.expect.empty()) return;
  ++result_->verified;
  const Expectation& e = r.expect[i];
  const bool value_matters = r.op == PD3_BIN_GET && e.status == EntryStatus::kOk;
  if (status == e.status && (!value_matters || value == e.value)) return;
  if (++result_->mismatches <= kMaxReportedMismatches) {
    std::fprintf(stderr,
                 "pd3_hashmap_client: mismatch: %s key %llu: expected status %u value %llu, got status %u value %llu\n",
                 op_name(r.op), (unsigned long long)r.keys[i], unsigned(e.status), (unsigned long long)e.value,
                 unsigned(status), (unsigned long long)value);
  }
}

bool ClientConnection::parse() {
  size_t pos = 0;
  while (in_.size() - pos >= sizeof(ResponseHeader)) {
    ResponseHeader h;
    std::memcpy(&h, in_.data() + pos, sizeof h);
    if (inflight_.empty()) return fail("a response nobody asked for");
    const InFlight& r = inflight_.front();
    if (h.magic != kResponseMagic || h.op != r.op || h.count != r.count) {
      return fail("response header does not match the request (magic " + std::to_string(h.magic) + ", op " +
                  std::to_string(h.op) + ", count " + std::to_string(h.count) + ")");
    }
    const size_t total = sizeof(uint32_t) + size_t(h.length);
    if (in_.size() - pos < total) break;
    const uint8_t* p = in_.data() + pos + sizeof h;
    const uint8_t* end = in_.data() + pos + total;
    for (uint16_t i = 0; i < h.count; ++i) {
      if (p >= end) return fail("response shorter than its entries");
      const EntryStatus status = EntryStatus(*p++);
      uint64_t value = 0;
      if (r.op == PD3_BIN_GET && status == EntryStatus::kOk) {
        uint32_t len;
        if (end - p < 4) return fail("response entry cut short");
        std::memcpy(&len, p, 4);
        if (len != kValueBytes || end - p < 4 + ptrdiff_t(len)) return fail("response value of " + std::to_string(len) + " bytes");
        value = load_u64(p + 4);
        p += 4 + len;
      }
      check(r, i, status, value);
    }
    if (p != end) return fail("response longer than its entries");
    ++result_->requests;
    result_->latency.record(now_ns() - r.sent_ns);
    inflight_.pop_front();
    pos += total;
  }
  in_.erase(in_.begin(), in_.begin() + std::ptrdiff_t(pos));
  return true;
}

}  // namespace pd3::hashmap
