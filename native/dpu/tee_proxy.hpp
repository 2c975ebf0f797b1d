// tee_proxy.hpp — the mirror backend for hosts without raw sockets: a TCP proxy on the app's
// public port that forwards every byte to the app (and back) at once, and hands the parsers a copy
// of what clients send (docs/architecture.md §3).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "common/log_queue.hpp"
#include "common/net.hpp"
#include "dpu/flow_callbacks.hpp"

namespace pd3 {

// How a TeeProxy is set up.
struct TeeProxyOptions {
  Endpoint listen;                        // the public address clients connect to
  Endpoint app;                           // where the app really listens
  uint32_t max_connections = 1024;
  uint32_t buffer_bytes = 256u << 10;     // per direction and connection: reading stops when full
  uint32_t connect_timeout_ms = 1000;
};

// Counters (relaxed atomics: statistics only).
struct TeeProxyStats {
  uint64_t connections = 0;        // open client connections
  uint64_t connections_total = 0;
  uint64_t refused = 0;            // over max_connections, or the app could not be reached
  uint64_t bytes_to_app = 0;
  uint64_t bytes_to_client = 0;
};

// The proxy: one epoll thread.
class TeeProxy {
 public:
  // Binds `listen` and starts the thread, which calls `callbacks` for every client connection
  // (open with synced = true, deliver with after_gap = false: a proxy sees every byte, close with
  // kFin, kReset or kShutdown). Returns PD3_OK, PD3_E_INVAL (bad options, no deliver callback) or
  // PD3_E_SYS (bind/listen/thread; pd3_last_error says why).
  static int start(const TeeProxyOptions& options, FlowCallbacks callbacks, std::unique_ptr<TeeProxy>* out);
  virtual ~TeeProxy() = default;  // implementations stop and join

  // Closes every connection and stops the thread; idempotent.
  virtual void stop() = 0;
  virtual uint16_t port() const = 0;
  virtual TeeProxyStats stats() const = 0;
  virtual LogQueue& log() = 0;
};

}  // namespace pd3
