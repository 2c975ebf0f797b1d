// binary_codec.cpp — the hash map's protocol (examples/hashmap/protocol.hpp): requests are
// pd3/binproto.h headers with 8-byte keys (record numbers, little-endian, as ycsb::binary_key) and
// 8-byte values; a response repeats op and count and carries a status byte per entry (GET hits add
// u32 length + value). A SCAN is one GET of `count` keys.
#include <cstdio>
#include <cstring>

#include "codec.hpp"
#include "pd3/binproto.h"
#include "protocol.hpp"

namespace pd3::loadgen {

namespace {

using hashmap::EntryStatus;
using hashmap::kKeyBytes;
using hashmap::kValueBytes;

constexpr uint32_t kGetEntry = 2 + kKeyBytes;
constexpr uint32_t kPutEntry = 2 + kKeyBytes + 4 + kValueBytes;

uint8_t* put_header(ByteBuffer& out, uint8_t op, uint16_t count, uint32_t entry_bytes) {
  const size_t total = sizeof(pd3_bin_header) + size_t(entry_bytes) * count;
  uint8_t* p = out.reserve(total);
  pd3_bin_header h{};
  h.length = uint32_t(sizeof(pd3_bin_header) - sizeof(uint32_t)) + entry_bytes * count;
  h.magic = PD3_BIN_MAGIC;
  h.op = op;
  h.count = count;
  std::memcpy(p, &h, sizeof h);
  out.commit(total);
  return p + sizeof h;
}

uint8_t* put_key(uint8_t* p, uint64_t key) {
  std::memcpy(p, &kKeyBytes, 2);
  ycsb::binary_key(key, p + 2);
  return p + 2 + kKeyBytes;
}

// GET / PUT with 8-byte keys and values.
class BinaryEncoder final : public RequestEncoder {
 public:
  void read(ByteBuffer& out, uint64_t key) const override { put_key(put_header(out, PD3_BIN_GET, 1, kGetEntry), key); }

  void write(ByteBuffer& out, uint64_t key, const ValueFormat& values, uint64_t version) const override {
    uint8_t* p = put_key(put_header(out, PD3_BIN_PUT, 1, kPutEntry), key);
    std::memcpy(p, &kValueBytes, 4);
    values.write(key, version, p + 4);
  }

  void read_run(ByteBuffer& out, uint64_t first_key, uint32_t count) const override {
    uint8_t* p = put_header(out, PD3_BIN_GET, uint16_t(count), kGetEntry);
    for (uint32_t i = 0; i < count; ++i) p = put_key(p, first_key + i);
  }

  std::string key_name(uint64_t key) const override { return std::to_string(key); }
};

const char* status_text(uint8_t s) {
  switch (EntryStatus(s)) {
    case EntryStatus::kBadKey: return "status 2 (bad key)";
    case EntryStatus::kBadValue: return "status 3 (bad value)";
    case EntryStatus::kFull: return "status 4 (table full)";
    case EntryStatus::kRemoteError: return "status 5 (remote memory error)";
    default: return "an unknown status";
  }
}

// Frames responses by their length field; a frame split across reads waits in carry_.
class BinaryDecoder final : public ReplyDecoder {
 public:
  bool feed(const uint8_t* p, size_t n, EntrySink& sink) override {
    if (!error_.empty()) return false;
    if (carry_.empty()) {
      size_t used = 0;
      if (!parse(p, n, sink, &used)) return false;
      if (used < n) carry_.append(p + used, n - used);
      return true;
    }
    carry_.append(p, n);
    size_t used = 0;
    const bool ok = parse(carry_.data(), carry_.size(), sink, &used);
    carry_.consume(used);
    return ok;
  }

  const std::string& error() const override { return error_; }

 private:
  bool fail(const std::string& why) {
    error_ = why;
    return false;
  }

  // Every complete response in [p, p + n); *used = bytes of those.
  bool parse(const uint8_t* p, size_t n, EntrySink& sink, size_t* used) {
    size_t at = 0;
    while (n - at >= sizeof(hashmap::ResponseHeader)) {
      hashmap::ResponseHeader h;
      std::memcpy(&h, p + at, sizeof h);
      if (h.magic != hashmap::kResponseMagic) {
        char msg[64];
        std::snprintf(msg, sizeof msg, "response magic 0x%02x, expected 0x%02x", h.magic, hashmap::kResponseMagic);
        return fail(msg);
      }
      if (h.length < sizeof h - sizeof(uint32_t) || h.length > PD3_BIN_MAX_REQUEST) {
        return fail("response length " + std::to_string(h.length) + " out of range");
      }
      const size_t total = sizeof(uint32_t) + size_t(h.length);
      if (n - at < total) break;
      const uint8_t* e = p + at + sizeof h;
      const uint8_t* const end = p + at + total;
      for (uint16_t i = 0; i < h.count; ++i) {
        if (e >= end) return fail("response shorter than its " + std::to_string(h.count) + " entries");
        const uint8_t status = *e++;
        ReplyEntry entry;
        if (status == uint8_t(EntryStatus::kOk) && h.op == PD3_BIN_GET) {
          uint32_t len;
          if (end - e < 4) return fail("response entry cut short");
          std::memcpy(&len, e, 4);
          if (size_t(end - e) - 4 < len) return fail("response value of " + std::to_string(len) + " bytes runs past its response");
          entry.kind = EntryKind::kValue;
          entry.bytes = std::string_view(reinterpret_cast<const char*>(e + 4), len);
          e += 4 + len;
        } else if (status == uint8_t(EntryStatus::kOk)) {
          entry.kind = EntryKind::kOk;
        } else if (status == uint8_t(EntryStatus::kNotFound)) {
          entry.kind = h.op == PD3_BIN_GET ? EntryKind::kNil : EntryKind::kUnexpected;
          entry.bytes = "status 1 (not found)";
        } else {
          entry.kind = EntryKind::kError;
          entry.bytes = status_text(status);
        }
        sink.on_entry(entry);
      }
      if (e != end) return fail("response longer than its entries");
      sink.on_reply_end();
      at += total;
    }
    *used = at;
    return true;
  }

  ByteBuffer carry_{4096};
  std::string error_;
};

}  // namespace

std::unique_ptr<RequestEncoder> make_binary_encoder() { return std::make_unique<BinaryEncoder>(); }
std::unique_ptr<ReplyDecoder> make_binary_decoder() { return std::make_unique<BinaryDecoder>(); }

}  // namespace pd3::loadgen
