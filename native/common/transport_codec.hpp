// transport_codec.hpp — decoding and encoding of transport frames and their records
// (pd3/transport.h). Every decoder is total: any bytes give a record or PD3_E_PROTOCOL, and
// nothing is read outside the buffer handed in. Shared by the memory server, the Transfer Engine
// and the host library's direct mode; fuzzed in test/native/transport_fuzz_test.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pd3/transport.h"

namespace pd3 {

// One request record inside a REQUEST frame (views into the frame's bytes).
struct TransportRequest {
  uint16_t op_id = 0;
  uint16_t reserved = 0;     // pd3_request.reserved as received (not 0: the server refuses the record)
  uint32_t region = 0;       // READ/WRITE: region id; CONTROL: sub-op
  uint32_t offset = 0;       // CONTROL DEALLOCATE: the region to release
  uint32_t size = 0;         // READ/WRITE bytes; ALLOCATE bytes wanted; PREFETCH: max_size
  const uint8_t* data = nullptr;  // WRITE data, or the PREFETCH key
  uint32_t data_len = 0;
  uint32_t record_len = 0;   // bytes the record occupies in the frame
  uint32_t op() const { return pd3_op_of(op_id); }
};

// One response record inside a RESPONSE frame.
struct TransportResponse {
  uint16_t op_id = 0;
  uint16_t status = 0;       // magnitude of a pd3_status
  uint32_t size = 0;
  const uint8_t* key = nullptr;   // PREFETCH only
  uint16_t key_len = 0;
  const uint8_t* data = nullptr;  // READ data, CONTROL reply or PREFETCH item
  uint32_t data_len = 0;
  uint32_t record_len = 0;
  uint32_t op() const { return pd3_op_of(op_id); }
};

// Checks a frame header read from the stream: kind, flags and length within [header, max_frame].
// Returns PD3_OK or PD3_E_PROTOCOL (pd3_last_error says what is wrong).
int check_frame_header(const pd3_frame& f, uint32_t max_frame);

// Decodes the request record at the start of buf[0, len). Returns PD3_OK or PD3_E_PROTOCOL
// (truncated, or a PREFETCH with an empty key).
int decode_request(const uint8_t* buf, size_t len, TransportRequest* out);
// Decodes the response record at the start of buf[0, len). Returns PD3_OK or PD3_E_PROTOCOL.
int decode_response(const uint8_t* buf, size_t len, TransportResponse* out);

// Walks a REQUEST (or RESPONSE) frame body: exactly `count` well-formed records filling it.
// Returns PD3_OK or PD3_E_PROTOCOL.
int validate_requests(const uint8_t* body, size_t len, uint32_t count);
int validate_responses(const uint8_t* body, size_t len, uint32_t count);

// Most bytes the response record to `req` can take (paper §6.1: the space reserved before sending).
// STATS replies are cut to PD3_STATS_REPLY_MAX.
uint64_t response_space(const TransportRequest& req);
inline constexpr uint32_t PD3_STATS_REPLY_MAX = 4096;

// The HELLO a client sends for `tenant` ("" = the default tenant) with `token` (the cluster token,
// or the tenant's credential), asking for `flags` (PD3_HELLO_*). Returns false if the token is
// longer than PD3_TOKEN_MAX, the tenant name is not valid_tenant_name() or a flag is unknown.
[[nodiscard]] bool encode_hello(std::string_view token, std::string_view tenant, uint16_t flags,
                                std::vector<uint8_t>* out);
// Server side: parses a HELLO frame body and sets *tenant to the tenant it names and *flags to the
// flags it asks for. Returns PD3_OK, PD3_E_PROTOCOL (malformed, wrong magic, a bad tenant name or
// an unknown flag), PD3_E_BAD_VERSION or PD3_E_AUTH: the token differs from
// tenant_credential(cluster_token, tenant), compared in constant time. A server without a cluster
// token (empty) authenticates nobody: the token must be empty too, and the tenant name only
// separates data.
[[nodiscard]] int check_hello(const uint8_t* body, size_t len, std::string_view cluster_token, std::string* tenant,
                              uint16_t* flags);
// The HELLO_REPLY frame for `reply` (all fields but magic filled by the caller).
void encode_hello_reply(pd3_hello_reply reply, std::vector<uint8_t>* out);
// Client side: parses a HELLO_REPLY frame body. Returns PD3_OK, PD3_E_PROTOCOL, or the negative
// status the server refused with.
int check_hello_reply(const uint8_t* body, size_t len, pd3_hello_reply* out);

// Appends records and frames to a byte vector (senders build frames in place).
class FrameBuilder {
 public:
  explicit FrameBuilder(std::vector<uint8_t>* out) : out_(out) {}
  // Starts a frame of `kind` and batch `seq`; records appended until finish() belong to it.
  void begin(uint16_t kind, uint64_t seq);
  void request(const pd3_request& hdr, const void* data, uint32_t data_len);
  void prefetch(uint16_t op_id, const void* key, uint16_t key_len, uint32_t max_size);
  void response(uint16_t op_id, int status, uint32_t size, const void* data, uint32_t data_len);
  void prefetch_response(uint16_t op_id, int status, const void* key, uint16_t key_len, uint32_t size,
                         const void* data, uint32_t data_len);
  // Appends raw, already encoded record bytes (e.g. copied from the request ring) as `records` records.
  void raw(const void* bytes, size_t len, uint32_t records);
  // Patches length and count into the header; returns the frame's length.
  uint32_t finish();
  uint32_t records() const { return count_; }
  size_t frame_bytes() const { return out_->size() - start_; }

 private:
  void put(const void* p, size_t n);
  std::vector<uint8_t>* out_;
  size_t start_ = 0;
  uint32_t count_ = 0;
};

}  // namespace pd3
