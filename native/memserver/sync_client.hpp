// sync_client.hpp — SyncClient: one blocking transport connection that sends one request record at a
// time and waits for its answer, for control-plane work that needs a handful of requests (the pool's
// region migrator copying a region between memory servers), never for the data path. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/net.hpp"
#include "common/unique_fd.hpp"
#include "pd3/transport.h"
#include "pd3/wire.h"

namespace pd3 {

// The answer to one request: its status and, when ok, its data (READ bytes, CONTROL reply).
struct SyncReply {
  int status = 0;  // PD3_OK or a negative pd3_status
  std::vector<uint8_t> data;
};

// A connection to one memory server, as one tenant.
class SyncClient {
 public:
  // Connects to `address` ("HOST:PORT") and says hello as `tenant` with `token`, each step within
  // `timeout_ms`. Returns PD3_OK, PD3_E_INVAL (bad address, token or tenant), PD3_E_AUTH,
  // PD3_E_BAD_VERSION, PD3_E_PROTOCOL, PD3_E_UNAVAILABLE or PD3_E_TIMEOUT (pd3_last_error says why).
  [[nodiscard]] int connect(std::string_view address, std::string_view token, std::string_view tenant, int timeout_ms);
  // Sends one READ, WRITE or CONTROL record (`data`: the WRITE's bytes) and waits up to the
  // connect timeout for its response. Returns PD3_OK with the server's answer in *reply (whose
  // status may be an error), or PD3_E_CLOSED (not connected), PD3_E_TOO_BIG (over the server's
  // max frame), PD3_E_UNAVAILABLE, PD3_E_TIMEOUT or PD3_E_PROTOCOL (a malformed or mismatched
  // answer): the connection is then closed.
  [[nodiscard]] int call(const pd3_request& request, const uint8_t* data, uint32_t data_len, SyncReply* reply);
  // Most bytes one READ or WRITE may carry on this connection (the server's max frame, less headers).
  uint32_t max_payload() const;
  bool connected() const { return fd_.get() >= 0; }
  void close() { fd_.reset(); }

 private:
  UniqueFd fd_;
  int timeout_ms_ = 0;
  uint32_t max_frame_ = 0;
  uint64_t seq_ = 0;
  FrameReader reader_;
};

}  // namespace pd3
