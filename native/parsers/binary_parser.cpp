// binary_parser.cpp — pd3/binproto.h requests → accesses: header and entry validation, pipelines,
// partial requests, and resync by scanning for a header that frames correctly.
#include "parsers/binary_parser.hpp"

#include <cstring>

#include "parsers/access_sink.hpp"
#include "parsers/record_keys.hpp"
#include "pd3/binproto.h"
#include "pd3/status.h"

namespace pd3 {

namespace {

// How far reading one request (or one part of it) got.
enum class Scan { kComplete, kIncomplete, kMalformed };

constexpr size_t kLengthField = sizeof(uint32_t);
constexpr size_t kHeader = sizeof(pd3_bin_header);
// Bytes of the smallest entry: a 1-byte key, plus the value length for PUT.
constexpr uint32_t min_entry(uint8_t op) { return op == PD3_BIN_PUT ? 2 + 1 + 4 : 2 + 1; }

uint32_t access_op(uint8_t op) {
  switch (op) {
    case PD3_BIN_GET: return PD3_ACCESS_READ;
    case PD3_BIN_PUT: return PD3_ACCESS_WRITE;
    default: return PD3_ACCESS_DELETE;
  }
}

// Checks the header fields present in p[0, avail): kMalformed as soon as one present is wrong.
Scan read_header(const uint8_t* p, size_t avail, pd3_bin_header* h) {
  std::memset(h, 0, sizeof *h);
  std::memcpy(h, p, avail < kHeader ? avail : kHeader);
  if (avail >= 4 && (h->length < kHeader - kLengthField || h->length > PD3_BIN_MAX_REQUEST)) return Scan::kMalformed;
  if (avail >= 5 && h->magic != PD3_BIN_MAGIC) return Scan::kMalformed;
  if (avail >= 6 && (h->op < PD3_BIN_GET || h->op > PD3_BIN_DEL)) return Scan::kMalformed;
  if (avail < kHeader) return Scan::kIncomplete;
  if (uint64_t(h->count) * min_entry(h->op) > h->length - (kHeader - kLengthField)) return Scan::kMalformed;
  return Scan::kComplete;
}

// Takes `n` bytes at offset *pos of the body: kMalformed if they pass the request's end
// (body_len), kIncomplete if they pass what has arrived (avail_len).
Scan take(size_t* pos, size_t n, size_t body_len, size_t avail_len) {
  if (body_len - *pos < n) return Scan::kMalformed;
  if (avail_len - *pos < n) return Scan::kIncomplete;
  *pos += n;
  return Scan::kComplete;
}

// Walks up to `limit` entries of a request body of body_len bytes at `body`, of which avail_len
// (≤ body_len) have arrived; gives their keys to `sink` when there is one. Having walked every
// entry, they must fill the body exactly. Keys are never empty (pd3/record.h cannot store one).
Scan read_entries(const pd3_bin_header& h, const uint8_t* body, size_t body_len, size_t avail_len, uint32_t limit,
                  AccessSink* sink) {
  size_t pos = 0;
  uint32_t i = 0;
  for (; i < h.count && i < limit; ++i) {
    size_t field = pos;
    if (const Scan s = take(&pos, 2, body_len, avail_len); s != Scan::kComplete) return s;
    uint16_t key_len;
    std::memcpy(&key_len, body + field, 2);
    if (key_len == 0) return Scan::kMalformed;
    const size_t key = pos;
    if (const Scan s = take(&pos, key_len, body_len, avail_len); s != Scan::kComplete) return s;
    if (h.op == PD3_BIN_PUT) {
      field = pos;
      if (const Scan s = take(&pos, 4, body_len, avail_len); s != Scan::kComplete) return s;
      uint32_t value_len;
      std::memcpy(&value_len, body + field, 4);
      if (const Scan s = take(&pos, value_len, body_len, avail_len); s != Scan::kComplete) return s;
    }
    if (sink) sink->add(body + key, key_len, access_op(h.op));
  }
  if (i == h.count && pos != body_len) return Scan::kMalformed;
  return Scan::kComplete;
}

int parse_request(void*, const uint8_t* buf, size_t len, pd3_access* out, uint32_t max, uint32_t* n,
                  size_t* consumed) {
  AccessSink sink(out, max);
  size_t done = 0;
  int rc = PD3_OK;
  while (done < len && !sink.full()) {
    sink.begin_request();
    const uint8_t* p = buf + done;
    const size_t avail = len - done;
    pd3_bin_header h;
    Scan s = read_header(p, avail, &h);
    const size_t total = kLengthField + size_t(h.length);
    if (s == Scan::kComplete && avail < total) s = Scan::kIncomplete;  // wait for the whole request
    if (s == Scan::kComplete) s = read_entries(h, p + kHeader, total - kHeader, total - kHeader, UINT32_MAX, &sink);
    if (s != Scan::kComplete || sink.deferred()) {
      sink.drop_request();
      if (s == Scan::kMalformed && done == 0) rc = PD3_E_PROTOCOL;  // later requests: next call
      break;
    }
    done += total;
  }
  *n = sink.count();
  *consumed = done;
  return rc;
}

// Entries resync checks before calling a header plausible (bounds its cost per candidate).
constexpr uint32_t kResyncEntries = 64;

int64_t resync(void*, const uint8_t* buf, size_t len) {
  for (size_t at = 0; at < len; ++at) {
    const uint8_t* p = buf + at;
    const size_t avail = len - at;
    pd3_bin_header h;
    const Scan s = read_header(p, avail, &h);
    if (s == Scan::kIncomplete) return int64_t(at);  // a header may be arriving: wait for it
    if (s == Scan::kMalformed) continue;
    const size_t total = kLengthField + size_t(h.length);
    const size_t arrived = (avail < total ? avail : total) - kHeader;
    if (read_entries(h, p + kHeader, total - kHeader, arrived, kResyncEntries, nullptr) != Scan::kMalformed)
      return int64_t(at);
  }
  return -1;
}

constexpr pd3_parser kBinaryParser = {
    PD3_PARSER_ABI_VERSION, 0, "binary", nullptr, nullptr, parse_request, resync, parse_kv_records,
};

}  // namespace

const pd3_parser* binary_parser() { return &kBinaryParser; }

}  // namespace pd3
