// parser_flow.hpp — one TCP flow's use of a parser: its state (flow_open/flow_close, RAII) and the
// calls into it, with a plug-in's answers checked so a broken library cannot make the agent read
// outside the stream.
#pragma once

#include <cstddef>
#include <cstdint>

#include "parsers/plugin_loader.hpp"
#include "pd3/parser.h"

namespace pd3 {

// A flow of one parser. Move-only; closing it (or destroying it) calls flow_close. Keeps the
// parser's library loaded while it lives.
class ParserFlow {
 public:
  ParserFlow() = default;
  // Opens a flow: PD3_OK, PD3_E_CLOSED (no parser) or PD3_E_NOMEM (flow_open returned NULL).
  static int open(const ParserHandle& parser, ParserFlow* out);
  ParserFlow(ParserFlow&& o) noexcept;
  ParserFlow& operator=(ParserFlow&& o) noexcept;
  ParserFlow(const ParserFlow&) = delete;
  ParserFlow& operator=(const ParserFlow&) = delete;
  ~ParserFlow() { close(); }

  // parse_request of pd3/parser.h. `max` must be at least PD3_PARSER_MIN_ACCESSES (PD3_E_INVAL).
  // Answers that break the ABI (a positive return, *n > max, *consumed > len, an unknown op, a NULL
  // key) become PD3_E_PROTOCOL with *n = *consumed = 0, and pd3_last_error names the parser.
  int parse_request(const uint8_t* buf, size_t len, pd3_access* out, uint32_t max, uint32_t* n, size_t* consumed);
  // resync of pd3/parser.h; an offset outside [0, len) from a plug-in is taken as -1.
  int64_t resync(const uint8_t* buf, size_t len);
  // Calls flow_close; the flow can no longer parse (PD3_E_CLOSED).
  void close();

  const ParserHandle& parser() const { return parser_; }

 private:
  ParserHandle parser_;
  void* state_ = nullptr;  // flow_open's result; NULL for a stateless parser
};

}  // namespace pd3
