// transport_codec.cpp — see transport_codec.hpp.
#include "common/transport_codec.hpp"

#include <cstddef>
#include <cstring>

#include "common/error.hpp"
#include "common/tenant_credential.hpp"
#include "pd3/status.h"

// The sizes transport.h states for the prefetch records.
static_assert(sizeof(pd3_prefetch_request) == 8, "transport.h: pd3_prefetch_request (8 B)");
static_assert(sizeof(pd3_prefetch_response) == 16, "transport.h: pd3_prefetch_response (16 B)");

namespace pd3 {

int check_frame_header(const pd3_frame& f, uint32_t max_frame) {
  if (f.kind < PD3_FRAME_HELLO || f.kind > PD3_FRAME_RESPONSE)
    return fail(PD3_E_PROTOCOL, "unknown frame kind %u", unsigned(f.kind));
  if (f.flags != 0) return fail(PD3_E_PROTOCOL, "frame flags %#x, expected 0", unsigned(f.flags));
  if (f.length < sizeof(pd3_frame) || f.length > max_frame)
    return fail(PD3_E_PROTOCOL, "frame length %u outside [%zu, %u]", f.length, sizeof(pd3_frame), max_frame);
  return PD3_OK;
}

int decode_request(const uint8_t* buf, size_t len, TransportRequest* out) {
  if (len < sizeof(uint16_t)) return PD3_E_PROTOCOL;
  uint16_t op_id;
  std::memcpy(&op_id, buf, sizeof op_id);
  TransportRequest r;
  r.op_id = op_id;
  if (pd3_op_of(op_id) == PD3_OP_PREFETCH) {
    pd3_prefetch_request h;
    if (len < sizeof h) return PD3_E_PROTOCOL;
    std::memcpy(&h, buf, sizeof h);
    if (h.key_len == 0 || len - sizeof h < h.key_len) return PD3_E_PROTOCOL;
    r.size = h.max_size;
    r.data = buf + sizeof h;
    r.data_len = h.key_len;
    r.record_len = uint32_t(sizeof h + h.key_len);
  } else {
    pd3_request h;
    if (len < sizeof h) return PD3_E_PROTOCOL;
    std::memcpy(&h, buf, sizeof h);
    const uint32_t payload = pd3_request_payload_len(&h);
    if (len - sizeof h < payload) return PD3_E_PROTOCOL;
    r.reserved = h.reserved;
    r.region = h.region;
    r.offset = h.offset;
    r.size = h.size;
    r.data = buf + sizeof h;
    r.data_len = payload;
    r.record_len = uint32_t(sizeof h + payload);
  }
  *out = r;
  return PD3_OK;
}

int decode_response(const uint8_t* buf, size_t len, TransportResponse* out) {
  if (len < sizeof(uint16_t)) return PD3_E_PROTOCOL;
  uint16_t op_id;
  std::memcpy(&op_id, buf, sizeof op_id);
  TransportResponse r;
  if (pd3_op_of(op_id) == PD3_OP_PREFETCH) {
    pd3_prefetch_response h;
    if (len < sizeof h) return PD3_E_PROTOCOL;
    std::memcpy(&h, buf, sizeof h);
    const uint64_t data = h.status == 0 ? h.size : 0;
    if (len - sizeof h < uint64_t(h.key_len) + data) return PD3_E_PROTOCOL;
    r.op_id = h.op_id;
    r.status = h.status;
    r.size = h.size;
    r.key = buf + sizeof h;
    r.key_len = h.key_len;
    r.data = r.key + h.key_len;
    r.data_len = uint32_t(data);
    r.record_len = uint32_t(sizeof h + h.key_len + data);
  } else {
    pd3_response h;
    if (len < sizeof h) return PD3_E_PROTOCOL;
    std::memcpy(&h, buf, sizeof h);
    const uint32_t data = pd3_response_data_len(&h);
    if (len - sizeof h < data) return PD3_E_PROTOCOL;
    r.op_id = h.op_id;
    r.status = h.status;
    r.size = h.size;
    r.data = buf + sizeof h;
    r.data_len = data;
    r.record_len = uint32_t(sizeof h + data);
  }
  *out = r;
  return PD3_OK;
}

namespace {

template <class Record, class Decode>
int validate_records(const uint8_t* body, size_t len, uint32_t count, Decode decode, const char* what) {
  size_t pos = 0;
  for (uint32_t i = 0; i < count; ++i) {
    Record r;
    if (decode(body + pos, len - pos, &r) != PD3_OK)
      return fail(PD3_E_PROTOCOL, "%s record %u of %u is truncated or malformed", what, i, count);
    pos += r.record_len;
  }
  if (pos != len) return fail(PD3_E_PROTOCOL, "%zu bytes after the last of %u %s records", len - pos, count, what);
  return PD3_OK;
}

}  // namespace

int validate_requests(const uint8_t* body, size_t len, uint32_t count) {
  return validate_records<TransportRequest>(body, len, count, decode_request, "request");
}

int validate_responses(const uint8_t* body, size_t len, uint32_t count) {
  return validate_records<TransportResponse>(body, len, count, decode_response, "response");
}

uint64_t response_space(const TransportRequest& req) {
  switch (req.op()) {
    case PD3_OP_READ:
      return sizeof(pd3_response) + uint64_t(req.size);
    case PD3_OP_WRITE:
      return sizeof(pd3_response);
    case PD3_OP_PREFETCH:
      return sizeof(pd3_prefetch_response) + uint64_t(req.data_len) + req.size;
    default:  // CONTROL
      if (req.region == PD3_CTL_ALLOCATE) return sizeof(pd3_response) + sizeof(pd3_alloc_reply);
      if (req.region == PD3_CTL_STATS) return sizeof(pd3_response) + PD3_STATS_REPLY_MAX;
      return sizeof(pd3_response);
  }
}

bool encode_hello(std::string_view token, std::string_view tenant, uint16_t flags, std::vector<uint8_t>* out) {
  if (token.size() > PD3_TOKEN_MAX || !valid_tenant_name(tenant) || (flags & ~PD3_HELLO_FLAGS_KNOWN) != 0) return false;
  FrameBuilder b(out);
  b.begin(PD3_FRAME_HELLO, 0);
  const pd3_hello h{PD3_TRANSPORT_MAGIC, PD3_TRANSPORT_VERSION, uint16_t(token.size()), uint16_t(tenant.size()), flags};
  b.raw(&h, sizeof h, 0);
  b.raw(token.data(), token.size(), 0);
  b.raw(tenant.data(), tenant.size(), 0);
  b.finish();
  return true;
}

int check_hello(const uint8_t* body, size_t len, std::string_view cluster_token, std::string* tenant,
                uint16_t* flags) {
  pd3_hello h{};
  // Magic and version first, from the part every version of the hello shares: a client of another
  // version learns PD3_E_BAD_VERSION even when the rest of its hello is laid out differently.
  constexpr size_t kVersioned = offsetof(pd3_hello, version) + sizeof h.version;
  if (len < kVersioned) return fail(PD3_E_PROTOCOL, "hello of %zu bytes is too short", len);
  std::memcpy(&h, body, kVersioned);
  if (h.magic != PD3_TRANSPORT_MAGIC) return fail(PD3_E_PROTOCOL, "hello magic %#x is not PD3T", h.magic);
  if (h.version != PD3_TRANSPORT_VERSION)
    return fail(PD3_E_BAD_VERSION, "client speaks transport version %u, server %u", unsigned(h.version),
                PD3_TRANSPORT_VERSION);
  if (len < sizeof h) return fail(PD3_E_PROTOCOL, "hello of %zu bytes is too short", len);
  std::memcpy(&h, body, sizeof h);
  if (h.token_len > PD3_TOKEN_MAX || h.tenant_len > PD3_TENANT_MAX || len != sizeof h + h.token_len + h.tenant_len)
    return fail(PD3_E_PROTOCOL, "hello token length %u and tenant length %u do not match the frame",
                unsigned(h.token_len), unsigned(h.tenant_len));
  if ((h.flags & ~PD3_HELLO_FLAGS_KNOWN) != 0)
    return fail(PD3_E_PROTOCOL, "hello flags %#x: unknown to this server (it knows %#x)", unsigned(h.flags),
                unsigned(PD3_HELLO_FLAGS_KNOWN));
  const std::string_view claimed(reinterpret_cast<const char*>(body) + sizeof h + h.token_len, h.tenant_len);
  if (!valid_tenant_name(claimed)) return fail(PD3_E_PROTOCOL, "hello names an invalid tenant");
  const std::string expected = cluster_token.empty() ? std::string() : tenant_credential(cluster_token, claimed);
  // Constant time in the token's bytes: the comparison does not stop at the first difference.
  unsigned diff = h.token_len != expected.size();
  const uint8_t* got = body + sizeof h;
  for (size_t i = 0; i < h.token_len; ++i) diff |= got[i] ^ uint8_t(i < expected.size() ? expected[i] : 0);
  if (diff != 0)
    return claimed.empty() ? fail(PD3_E_AUTH, "wrong auth token")
                           : fail(PD3_E_AUTH, "wrong credential for tenant %.*s", int(claimed.size()), claimed.data());
  tenant->assign(claimed);
  *flags = h.flags;
  return PD3_OK;
}

void encode_hello_reply(pd3_hello_reply reply, std::vector<uint8_t>* out) {
  reply.magic = PD3_TRANSPORT_MAGIC;
  FrameBuilder b(out);
  b.begin(PD3_FRAME_HELLO_REPLY, 0);
  b.raw(&reply, sizeof reply, 0);
  b.finish();
}

int check_hello_reply(const uint8_t* body, size_t len, pd3_hello_reply* out) {
  if (len != sizeof(pd3_hello_reply)) return fail(PD3_E_PROTOCOL, "hello reply of %zu bytes", len);
  std::memcpy(out, body, sizeof *out);
  if (out->magic != PD3_TRANSPORT_MAGIC) return fail(PD3_E_PROTOCOL, "hello reply magic %#x", out->magic);
  if (out->status != 0)
    return fail(-int(out->status), "memory server refused the connection: %s", pd3_status_str(out->status));
  if (out->version != PD3_TRANSPORT_VERSION)
    return fail(PD3_E_BAD_VERSION, "server speaks transport version %u", unsigned(out->version));
  // Every 16-bit server_id is a valid id (PD3_MAX_SERVERS is 2^16): nothing more to check.
  static_assert(PD3_MAX_SERVERS - 1 == UINT16_MAX, "pd3_hello_reply.server_id holds every server id");
  return PD3_OK;
}

void FrameBuilder::put(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  out_->insert(out_->end(), b, b + n);
}

void FrameBuilder::begin(uint16_t kind, uint64_t seq) {
  start_ = out_->size();
  count_ = 0;
  const pd3_frame f{0, kind, 0, 0, 0, seq};
  put(&f, sizeof f);
}

void FrameBuilder::request(const pd3_request& hdr, const void* data, uint32_t data_len) {
  put(&hdr, sizeof hdr);
  if (data_len) put(data, data_len);
  ++count_;
}

void FrameBuilder::prefetch(uint16_t op_id, const void* key, uint16_t key_len, uint32_t max_size) {
  const pd3_prefetch_request h{op_id, key_len, max_size};
  put(&h, sizeof h);
  put(key, key_len);
  ++count_;
}

void FrameBuilder::response(uint16_t op_id, int status, uint32_t size, const void* data, uint32_t data_len) {
  const pd3_response h{op_id, uint16_t(status < 0 ? -status : status), size};
  put(&h, sizeof h);
  if (data_len) put(data, data_len);
  ++count_;
}

void FrameBuilder::prefetch_response(uint16_t op_id, int status, const void* key, uint16_t key_len, uint32_t size,
                                     const void* data, uint32_t data_len) {
  const pd3_prefetch_response h{op_id, uint16_t(status < 0 ? -status : status), size, key_len, {0, 0, 0}};
  put(&h, sizeof h);
  put(key, key_len);
  if (data_len) put(data, data_len);
  ++count_;
}

void FrameBuilder::raw(const void* bytes, size_t len, uint32_t records) {
  if (len) put(bytes, len);
  count_ += records;
}

uint32_t FrameBuilder::finish() {
  const uint32_t len = uint32_t(out_->size() - start_);
  std::memcpy(out_->data() + start_ + offsetof(pd3_frame, length), &len, sizeof len);
  std::memcpy(out_->data() + start_ + offsetof(pd3_frame, count), &count_, sizeof count_);
  return len;
}

}  // namespace pd3
