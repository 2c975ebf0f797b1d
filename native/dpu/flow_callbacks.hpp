// flow_callbacks.hpp — how a mirror backend (AF_PACKET capture + reassembly, or the tee proxy)
// hands each client connection's request bytes, in order, to the parsers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace pd3 {

// One TCP connection to the app, client side first. Host byte order.
struct FlowKey {
  uint32_t client_ip = 0;
  uint32_t server_ip = 0;
  uint16_t client_port = 0;
  uint16_t server_port = 0;
  bool operator==(const FlowKey&) const = default;
};

// Why a flow ended (the close callback's argument).
enum class FlowEnd : uint8_t {
  kFin,       // the client's FIN, after every byte before it was delivered
  kReset,     // a RST from either side
  kIdle,      // nothing seen for idle_timeout
  kEvicted,   // the flow table was full and this was the least recently active flow
  kReplaced,  // a SYN with another initial sequence number reused the 4-tuple
  kShutdown,  // close_all() (the mirror stopped)
};

// "fin", "reset", ... for logs and tests.
const char* flow_end_name(FlowEnd why);

// In-order client→server bytes of flow `flow_id`; `data` is valid only during the call. after_gap:
// bytes are missing just before `data` (or the flow was first seen mid-stream): the parser must
// resync before it trusts a request boundary.
using DeliverFn = std::function<void(uint64_t flow_id, const uint8_t* data, size_t len, bool after_gap)>;
// A new flow. synced: it began with a SYN, so its first byte starts a request.
using FlowOpenFn = std::function<void(uint64_t flow_id, const FlowKey& key, bool synced)>;
// A flow ended; no callback names flow_id again.
using FlowCloseFn = std::function<void(uint64_t flow_id, FlowEnd why)>;

// What the reassembler tells its owner. Called on the owner's thread; a callback must not call
// back into the reassembler. `deliver` is required, the others optional.
struct FlowCallbacks {
  DeliverFn deliver;
  FlowOpenFn open;
  FlowCloseFn close;
};

}  // namespace pd3
