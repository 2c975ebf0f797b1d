// sync_client.cpp — SyncClient (sync_client.hpp).
#include "memserver/sync_client.hpp"

#include <poll.h>

#include <cassert>

#include "common/error.hpp"
#include "common/transport_codec.hpp"
#include "pd3/status.h"

namespace pd3 {

int SyncClient::connect(std::string_view address, std::string_view token, std::string_view tenant, int timeout_ms) {
  assert(timeout_ms > 0);
  close();
  Endpoint ep;
  if (!parse_endpoint(address, &ep)) return fail(PD3_E_INVAL, "not a HOST:PORT address: %.*s", int(address.size()), address.data());
  int fd = -1;
  if (const int rc = tcp_connect(ep, timeout_ms, &fd)) return rc;
  UniqueFd owned(fd);
  pd3_hello_reply hello{};
  if (const int rc = client_hello(fd, token, tenant, timeout_ms, &hello)) return rc;
  fd_ = std::move(owned);
  timeout_ms_ = timeout_ms;
  max_frame_ = hello.max_frame;
  reader_ = FrameReader(PD3_FRAME_MAX_LIMIT);  // the server bounds its own response frames
  return PD3_OK;
}

uint32_t SyncClient::max_payload() const {
  const uint32_t headers = sizeof(pd3_frame) + sizeof(pd3_request);
  return max_frame_ > headers ? max_frame_ - headers : 0;
}

int SyncClient::call(const pd3_request& request, const uint8_t* data, uint32_t data_len, SyncReply* reply) {
  if (!connected()) return fail(PD3_E_CLOSED, "not connected");
  if (data_len > max_payload() || (pd3_op_of(request.op_id) == PD3_OP_READ && request.size > max_payload()))
    return fail(PD3_E_TOO_BIG, "%u bytes exceed the server's %u-byte frames", request.size, max_frame_);
  std::vector<uint8_t> frame;
  FrameBuilder builder(&frame);
  const uint64_t seq = ++seq_;
  builder.begin(PD3_FRAME_REQUEST, seq);
  builder.request(request, data, data_len);
  builder.finish();
  const int sent = send_all(fd_.get(), frame.data(), frame.size(), timeout_ms_);
  if (sent != PD3_OK) {
    close();
    return fail(sent, "sending a request failed");
  }
  const uint64_t deadline = now_ns() + uint64_t(timeout_ms_) * 1'000'000ull;
  for (;;) {
    pd3_frame f;
    const uint8_t* body = nullptr;
    const int got = reader_.next(&f, &body);
    if (got < 0) {
      close();
      return got;
    }
    if (got == 1) {
      TransportResponse r;
      const size_t len = f.length - sizeof f;
      // One record, answering this request: anything else is a broken server or stream.
      if (f.kind != PD3_FRAME_RESPONSE || f.seq != seq || f.count != 1 || validate_responses(body, len, 1) != PD3_OK ||
          decode_response(body, len, &r) != PD3_OK || r.op_id != request.op_id) {
        close();
        return fail(PD3_E_PROTOCOL, "unexpected answer (frame kind %u, seq %llu, %u records)", f.kind,
                    (unsigned long long)f.seq, f.count);
      }
      reply->status = -int(r.status);
      reply->data.assign(r.data, r.data + r.data_len);
      return PD3_OK;
    }
    if (const int rc = wait_fd(fd_.get(), POLLIN, deadline)) {
      close();
      return rc == PD3_E_TIMEOUT ? fail(PD3_E_TIMEOUT, "no answer in %d ms", timeout_ms_) : rc;
    }
    if (reader_.fill(fd_.get()) < 0) {
      close();
      return fail(PD3_E_UNAVAILABLE, "connection closed");
    }
  }
}

}  // namespace pd3
