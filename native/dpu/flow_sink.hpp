// flow_sink.hpp — where a mirror backend (AF_PACKET capture + reassembly, or the tee proxy)
// delivers each client connection's request bytes, in order, for the parsers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pd3 {

// The consumer of client→server byte streams. Called from the backend's thread only.
class FlowSink {
 public:
  virtual ~FlowSink() = default;
  // A new client connection (flow ids are unique per backend instance).
  virtual void on_open(uint64_t flow) = 0;
  // The next bytes of the flow's stream. `after_gap`: bytes before these were lost (the parser
  // must resynchronise and prefetch nothing until it has). `data` is valid during the call only.
  virtual void on_bytes(uint64_t flow, const uint8_t* data, size_t len, bool after_gap) = 0;
  // The connection ended (FIN, RST, timeout or close); no more calls for this flow.
  virtual void on_close(uint64_t flow) = 0;
};

}  // namespace pd3
