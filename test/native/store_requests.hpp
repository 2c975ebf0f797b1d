// store_requests.hpp — what the MemStore tests (memstore_test, memstore_warm_test, tier_store_test,
// the record parser's and the TCP server's) build and read: an opened store, key/value records,
// transport request records with fresh op ids, and response records copied out of a frame.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/transport_codec.hpp"
#include "harness.hpp"
#include "memserver/mem_store.hpp"
#include "pd3/record.h"
#include "pd3/status.h"
#include "pd3/transport.h"

namespace pd3test {

// The store `o` opens (the test stops, saying why, if it does not).
inline std::unique_ptr<pd3::MemStore> open_store(const pd3::MemStoreOptions& o) {
  std::unique_ptr<pd3::MemStore> s;
  const int rc = pd3::MemStore::open(o, &s);
  if (rc != PD3_OK) std::fprintf(stderr, "  open: %s\n", pd3_last_error());
  REQUIRE(rc == PD3_OK && s != nullptr);
  return s;
}

// One decoded response record, its bytes copied out of the frame.
struct StoreReply {
  int status = 0;  // negative pd3_status
  uint32_t size = 0;
  std::string key;  // PREFETCH only
  std::vector<uint8_t> data;
};

// One key/value record in the built-in record format (pd3/record.h).
inline std::vector<uint8_t> kv_record(std::string_view key, std::string_view value) {
  const pd3_kv_header h{uint32_t(key.size()), uint32_t(value.size())};
  std::vector<uint8_t> out(sizeof h + key.size() + value.size());
  std::memcpy(out.data(), &h, sizeof h);
  std::memcpy(out.data() + sizeof h, key.data(), key.size());
  std::memcpy(out.data() + sizeof h + key.size(), value.data(), value.size());
  return out;
}

// A request record with the next op id (ids are unique across the test binary).
inline pd3::TransportRequest request(uint32_t op, uint32_t region, uint32_t offset, uint32_t size,
                                     const void* data = nullptr, uint32_t data_len = 0) {
  static uint32_t next_id = 0;
  pd3::TransportRequest r;
  r.op_id = pd3_op_id(op, ++next_id & PD3_ID_MASK);
  r.region = region;
  r.offset = offset;
  r.size = size;
  r.data = static_cast<const uint8_t*>(data);
  r.data_len = data_len;
  return r;
}

// The reply a decoded response record carries.
inline StoreReply store_reply(const pd3::TransportResponse& r) {
  StoreReply out;
  out.status = -int(r.status);
  out.size = r.size;
  out.key.assign(reinterpret_cast<const char*>(r.key), r.key_len);
  out.data.assign(r.data, r.data + r.data_len);
  return out;
}

}  // namespace pd3test
