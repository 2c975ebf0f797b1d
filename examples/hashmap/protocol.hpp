// protocol.hpp — the hash map's client protocol: requests are pd3/binproto.h; this file defines the
// responses, the per-entry status codes, the 8-byte key and value forms, the values of the bulk
// load, and the encoders the load client uses. Shared by the server and the client.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

#include "pd3/binproto.h"

static_assert(std::endian::native == std::endian::little, "the wire formats are little-endian");

namespace pd3::hashmap {

// First byte after a response's length field (requests carry PD3_BIN_MAGIC).
inline constexpr uint8_t kResponseMagic = 0xD4;
// Keys and values are exactly this long; other lengths are answered per entry, not by a close.
inline constexpr uint16_t kKeyBytes = 8;
inline constexpr uint32_t kValueBytes = 8;

#pragma pack(push, 1)
// Header of one response. Laid out as pd3_bin_header: `length` counts the bytes after itself,
// `op` and `count` repeat the request's, and `count` entries follow in request order.
struct ResponseHeader {
  uint32_t length;
  uint8_t magic;  // kResponseMagic
  uint8_t op;     // PD3_BIN_GET, PD3_BIN_PUT or PD3_BIN_DEL
  uint16_t count;
};
#pragma pack(pop)

// Result of one entry: a u8. A GET entry with kOk is followed by u32 value_len and the value;
// every other entry is the status byte alone.
enum class EntryStatus : uint8_t {
  kOk = 0,           // GET: found; PUT: stored; DEL: deleted
  kNotFound = 1,     // GET, DEL: no such key
  kBadKey = 2,       // the key is not kKeyBytes long
  kBadValue = 3,     // PUT: the value is not kValueBytes long
  kFull = 4,         // PUT: no free slot in the key's probe sequence (the table does not grow)
  kRemoteError = 5,  // remote memory failed (memory server or agent down); see the server's log
};

inline uint64_t load_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void store_u64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, sizeof v); }

// The value the bulk load stores under key k (keys 0..records-1 as u64 little-endian): a bijection,
// so a value read under the wrong key is noticed.
inline uint64_t load_value(uint64_t key) {
  uint64_t x = key ^ 0x5D3A11E7C0FFEE00ull;
  x ^= x >> 31;
  x *= 0x7FB5D329728EA185ull;
  x ^= x >> 27;
  x *= 0x81DADEF4BC2DD44Dull;
  x ^= x >> 33;
  return x;
}

// Appends one request of `op` over `keys` (with `values` for PUT) to `out`.
inline void encode_request(uint8_t op, const uint64_t* keys, const uint64_t* values, uint16_t count,
                           std::vector<uint8_t>* out) {
  const uint32_t entry = 2u + kKeyBytes + (op == PD3_BIN_PUT ? 4u + kValueBytes : 0u);
  pd3_bin_header h{};
  h.length = uint32_t(sizeof(pd3_bin_header) - sizeof(uint32_t)) + entry * count;
  h.magic = PD3_BIN_MAGIC;
  h.op = op;
  h.count = count;
  const size_t at = out->size();
  out->resize(at + sizeof h + size_t(entry) * count);
  uint8_t* p = out->data() + at;
  std::memcpy(p, &h, sizeof h);
  p += sizeof h;
  for (uint16_t i = 0; i < count; ++i) {
    std::memcpy(p, &kKeyBytes, 2);
    store_u64(p + 2, keys[i]);
    p += 2 + kKeyBytes;
    if (op == PD3_BIN_PUT) {
      std::memcpy(p, &kValueBytes, 4);
      store_u64(p + 4, values[i]);
      p += 4 + kValueBytes;
    }
  }
}

}  // namespace pd3::hashmap
