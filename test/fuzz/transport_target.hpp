// transport_target.hpp — one fuzz input → the transport decoders, with their properties checked.
// Shared by the libFuzzer entry point (test/fuzz/transport_fuzzer.cpp) and the seeded in-suite
// fuzzer (test/native/transport_fuzz_test.cpp). A violated property calls abort().
#pragma once

#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "common/tenant_credential.hpp"
#include "common/net.hpp"
#include "fuzz_assert.hpp"
#include "common/transport_codec.hpp"
#include "pd3/status.h"

namespace pd3fuzz {

inline constexpr std::string_view kToken = "fuzz-token";
inline constexpr uint32_t kMaxFrame = 1u << 16;

// A copy of some bytes that ends exactly at a PROT_NONE page, so reading one byte past the end
// faults even without a sanitizer.
class GuardedCopy {
 public:
  GuardedCopy(const uint8_t* p, size_t n) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    span_ = ((n + page - 1) / page + 1) * page;
    base_ = static_cast<uint8_t*>(mmap(nullptr, span_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    PD3_FUZZ_ASSERT(base_ != MAP_FAILED);
    mprotect(base_ + span_ - page, page, PROT_NONE);
    data_ = base_ + span_ - page - n;
    if (n) std::memcpy(data_, p, n);
  }
  ~GuardedCopy() { munmap(base_, span_); }
  GuardedCopy(const GuardedCopy&) = delete;
  GuardedCopy& operator=(const GuardedCopy&) = delete;
  const uint8_t* data() const { return data_; }

 private:
  uint8_t* base_;
  uint8_t* data_;
  size_t span_;
};

// Walks a frame body that validated: every record must lie inside it and they must tile it.
template <class Record, class Decode>
void walk(const uint8_t* body, size_t len, uint32_t count, Decode decode) {
  size_t pos = 0;
  for (uint32_t i = 0; i < count; ++i) {
    Record r;
    PD3_FUZZ_ASSERT(decode(body + pos, len - pos, &r) == PD3_OK);
    PD3_FUZZ_ASSERT(r.record_len > 0 && r.record_len <= len - pos);
    PD3_FUZZ_ASSERT(r.data_len == 0 || (r.data >= body + pos && r.data + r.data_len <= body + pos + r.record_len));
    pos += r.record_len;
  }
  PD3_FUZZ_ASSERT(pos == len);
}

// Checks one frame's body with the decoder its kind calls for. Returns 1 if it was accepted.
inline int check_frame(const pd3_frame& f, const uint8_t* raw_body) {
  const size_t len = f.length - sizeof f;
  GuardedCopy body(raw_body, len);
  switch (f.kind) {
    case PD3_FRAME_REQUEST:
      if (pd3::validate_requests(body.data(), len, f.count) != PD3_OK) return 0;
      walk<pd3::TransportRequest>(body.data(), len, f.count, pd3::decode_request);
      for (size_t pos = 0; pos < len;) {  // every accepted request has a bounded response
        pd3::TransportRequest r;
        pd3::decode_request(body.data() + pos, len - pos, &r);
        PD3_FUZZ_ASSERT(pd3::response_space(r) >= sizeof(pd3_response));
        pos += r.record_len;
      }
      return 1;
    case PD3_FRAME_RESPONSE:
      if (pd3::validate_responses(body.data(), len, f.count) != PD3_OK) return 0;
      walk<pd3::TransportResponse>(body.data(), len, f.count, pd3::decode_response);
      return 1;
    case PD3_FRAME_HELLO: {
      std::string tenant;
      uint16_t flags = 0;
      const int rc = pd3::check_hello(body.data(), len, kToken, &tenant, &flags);
      if (rc != PD3_OK) return 0;
      // Only the exact hello of the tenant it names, with that tenant's credential and known flags,
      // may pass.
      PD3_FUZZ_ASSERT((flags & ~PD3_HELLO_FLAGS_KNOWN) == 0);
      std::vector<uint8_t> good;
      PD3_FUZZ_ASSERT(pd3::encode_hello(pd3::tenant_credential(kToken, tenant), tenant, flags, &good));
      PD3_FUZZ_ASSERT(len == good.size() - sizeof(pd3_frame));
      PD3_FUZZ_ASSERT(std::memcmp(body.data(), good.data() + sizeof(pd3_frame), len) == 0);
      return 1;
    }
    default: {
      pd3_hello_reply reply;
      return pd3::check_hello_reply(body.data(), len, &reply) == PD3_OK;
    }
  }
}

// Feeds `data` after its first byte as a byte stream through a socket into a FrameReader, in
// pieces whose sizes come from that first byte, and checks every frame it yields. Returns frames
// accepted.
inline int run_transport_input(const uint8_t* input, size_t input_size) {
  if (input_size == 0 || input_size > (1u << 18)) return 0;
  const size_t piece = 1 + input[0] % 97;
  const uint8_t* data = input + 1;
  const size_t size = input_size - 1;
  int sv[2];
  PD3_FUZZ_ASSERT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
  pd3::FrameReader reader(kMaxFrame);
  size_t sent = 0;
  int accepted = 0;
  bool open = true;
  while (open) {
    if (sent < size) {
      const ssize_t n = ::send(sv[0], data + sent, std::min(piece, size - sent), MSG_NOSIGNAL);
      if (n > 0) sent += size_t(n);
    } else if (sv[0] >= 0) {
      ::close(sv[0]);  // EOF after the last byte
      sv[0] = -1;
    }
    const long got = reader.fill(sv[1]);
    for (;;) {
      pd3_frame f;
      const uint8_t* body = nullptr;
      const int rc = reader.next(&f, &body);
      if (rc == 0) break;
      if (rc < 0) {
        PD3_FUZZ_ASSERT(rc == PD3_E_PROTOCOL);
        open = false;
        break;
      }
      PD3_FUZZ_ASSERT(f.length >= sizeof f && f.length <= kMaxFrame);
      accepted += check_frame(f, body);
    }
    if (got < 0) open = false;  // the writer closed: everything was delivered
  }
  if (sv[0] >= 0) ::close(sv[0]);
  ::close(sv[1]);
  return accepted;
}

}  // namespace pd3fuzz
