// parser_target.hpp — drives a parser the way the agent does (repeated parse_request calls over a
// flow's reassembled stream) and checks its properties on one fuzz input. Shared by the libFuzzer
// entry points (test/fuzz/resp_fuzzer.cpp, binary_fuzzer.cpp) and the native tests
// (test/native/*parser*_test.cpp). A violated property calls abort().
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_assert.hpp"
#include "pd3/parser.h"
#include "pd3/status.h"

namespace pd3fuzz {

// One access, with its key copied out of the stream.
struct ParsedAccess {
  std::string key;
  uint32_t op;
  bool operator==(const ParsedAccess&) const = default;
};

// What parsing a stream gave: every access in order, the bytes of complete requests, and the
// status of the call that stopped (0, or PD3_E_PROTOCOL at byte `consumed`).
struct StreamResult {
  std::vector<ParsedAccess> accesses;
  size_t consumed = 0;
  int status = PD3_OK;
  bool operator==(const StreamResult&) const = default;
};

// Calls parse_request on buf[0, len) and on what follows each consumed prefix, until a call
// consumes nothing (the rest is an incomplete request) or fails; appends to *r. Checks the ABI's
// promises on every call; with keys_in_input, that every key lies inside buf[0, len).
inline void drive(const pd3_parser* p, void* flow, const uint8_t* buf, size_t len, uint32_t max, bool keys_in_input,
                  StreamResult* r) {
  std::vector<pd3_access> out(max ? max : 1);
  size_t off = 0;
  for (;;) {
    uint32_t n = 0xFFFFFFFFu;
    size_t consumed = ~size_t(0);
    const int rc = p->parse_request(flow, buf + off, len - off, out.data(), max, &n, &consumed);
    PD3_FUZZ_ASSERT(rc == PD3_OK || rc == PD3_E_PROTOCOL);
    PD3_FUZZ_ASSERT(n <= max && consumed <= len - off);
    if (rc != PD3_OK) {
      PD3_FUZZ_ASSERT(n == 0 && consumed == 0);  // an error is about the bytes at the start
      r->status = rc;
      break;
    }
    PD3_FUZZ_ASSERT(consumed > 0 || n == 0);
    for (uint32_t i = 0; i < n; ++i) {
      const pd3_access& a = out[i];
      PD3_FUZZ_ASSERT(a.op >= PD3_ACCESS_READ && a.op <= PD3_ACCESS_DELETE);
      if (keys_in_input) {
        // Inside the requests this call consumed, not merely inside the buffer.
        PD3_FUZZ_ASSERT(a.key >= buf + off && a.key_len <= consumed && a.key - (buf + off) <= ptrdiff_t(consumed - a.key_len));
      }
      r->accesses.push_back({std::string(reinterpret_cast<const char*>(a.key), a.key_len), a.op});
    }
    off += consumed;
    if (consumed == 0 || off == len) break;
  }
  r->consumed += off;
}

// parse of a whole buffer.
inline StreamResult parse_stream(const pd3_parser* p, const uint8_t* buf, size_t len,
                                 uint32_t max = PD3_PARSER_MIN_ACCESSES, bool keys_in_input = true) {
  StreamResult r;
  drive(p, nullptr, buf, len, max, keys_in_input, &r);
  return r;
}

// The same stream delivered in pieces as reassembly would: bytes are appended to a pending buffer,
// the parser runs over it, and consumed bytes are dropped. piece(i) gives the i-th piece's size (≥ 1).
template <class PieceSize>
StreamResult parse_in_pieces(const pd3_parser* p, void* flow, const uint8_t* buf, size_t len, PieceSize piece,
                             uint32_t max = PD3_PARSER_MIN_ACCESSES) {
  StreamResult r;
  std::vector<uint8_t> pending;
  size_t fed = 0;
  for (size_t i = 0; fed < len && r.status == PD3_OK; ++i) {
    const size_t k = std::min(len - fed, std::max<size_t>(1, piece(i)));
    pending.insert(pending.end(), buf + fed, buf + fed + k);
    fed += k;
    const size_t before = r.consumed;
    drive(p, flow, pending.data(), pending.size(), max, flow == nullptr, &r);
    pending.erase(pending.begin(), pending.begin() + ptrdiff_t(r.consumed - before));
  }
  return r;
}

// A reusable buffer whose end touches a PROT_NONE page: an input copied to its end faults on any
// read past it, even without a sanitizer.
class GuardedTail {
 public:
  static constexpr size_t kCapacity = 1u << 16;
  GuardedTail() {
    page_ = size_t(sysconf(_SC_PAGESIZE));
    span_ = kCapacity + page_;
    base_ = static_cast<uint8_t*>(mmap(nullptr, span_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    PD3_FUZZ_ASSERT(base_ != MAP_FAILED);
    PD3_FUZZ_ASSERT(mprotect(base_ + kCapacity, page_, PROT_NONE) == 0);
  }
  ~GuardedTail() { munmap(base_, span_); }
  GuardedTail(const GuardedTail&) = delete;
  GuardedTail& operator=(const GuardedTail&) = delete;
  // Copies p[0, n) (n ≤ kCapacity) so that it ends at the guard page.
  const uint8_t* place(const uint8_t* p, size_t n) {
    uint8_t* at = base_ + kCapacity - n;
    if (n) std::memcpy(at, p, n);
    return at;
  }

 private:
  uint8_t* base_;
  size_t page_;
  size_t span_;
};

// One fuzz input: byte 0 picks the piece size and byte 1 a split point; the rest is the stream.
// Properties: calls keep the ABI's promises (drive); keys lie inside the consumed requests; parsing
// the consumed prefix again gives the same accesses; delivering the stream in pieces gives the same
// result as a whole; when both halves of a split parse whole and without error, the stream's
// result is their concatenation; resync answers -1 or an offset inside the buffer. Returns the
// number of accesses.
inline size_t run_parser_input(const pd3_parser* p, const uint8_t* data, size_t size) {
  static GuardedTail guarded;
  if (size < 2 || size - 2 > GuardedTail::kCapacity) return 0;
  const uint8_t piece_byte = data[0], split_byte = data[1];
  const size_t len = size - 2;
  const uint8_t* stream = guarded.place(data + 2, len);

  const StreamResult whole = parse_stream(p, stream, len);
  PD3_FUZZ_ASSERT(whole.consumed <= len);

  const StreamResult prefix = parse_stream(p, stream, whole.consumed);
  PD3_FUZZ_ASSERT(prefix.status == PD3_OK && prefix.consumed == whole.consumed && prefix.accesses == whole.accesses);

  const size_t step = 1 + piece_byte % 61;
  const StreamResult pieces =
      parse_in_pieces(p, nullptr, stream, len, [&](size_t i) { return piece_byte & 0x80 ? step : 1 + (i * 7 + step) % 23; });
  PD3_FUZZ_ASSERT(pieces == whole);

  const size_t split = len ? (size_t(split_byte) * len) / 255 : 0;
  const StreamResult a = parse_stream(p, stream, split);
  const StreamResult b = parse_stream(p, stream + split, len - split);
  if (a.status == PD3_OK && a.consumed == split && b.status == PD3_OK && b.consumed == len - split) {
    std::vector<ParsedAccess> joined = a.accesses;
    joined.insert(joined.end(), b.accesses.begin(), b.accesses.end());
    PD3_FUZZ_ASSERT(whole.status == PD3_OK && whole.consumed == len && whole.accesses == joined);
  }

  const int64_t at = p->resync(nullptr, stream, len);
  PD3_FUZZ_ASSERT(at == -1 || (at >= 0 && uint64_t(at) < len));
  return whole.accesses.size();
}

}  // namespace pd3fuzz
