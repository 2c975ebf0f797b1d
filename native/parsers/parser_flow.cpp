// parser_flow.cpp — flow state lifetime and the checks on every parse_request/resync answer.
#include "parsers/parser_flow.hpp"

#include <utility>

#include "common/error.hpp"
#include "pd3/status.h"

namespace pd3 {

int ParserFlow::open(const ParserHandle& parser, ParserFlow* out) {
  if (!parser) return fail(PD3_E_CLOSED, "no parser loaded");
  void* state = nullptr;
  if (parser->flow_open) {
    state = parser->flow_open(parser.get());
    if (!state) return fail(PD3_E_NOMEM, "parser '%s': flow_open failed", parser->name);
  }
  out->close();
  out->parser_ = parser;
  out->state_ = state;
  return PD3_OK;
}

ParserFlow::ParserFlow(ParserFlow&& o) noexcept : parser_(std::move(o.parser_)), state_(std::exchange(o.state_, nullptr)) {
  o.parser_ = ParserHandle();
}

ParserFlow& ParserFlow::operator=(ParserFlow&& o) noexcept {
  if (this != &o) {
    close();
    parser_ = std::exchange(o.parser_, ParserHandle());
    state_ = std::exchange(o.state_, nullptr);
  }
  return *this;
}

void ParserFlow::close() {
  if (state_ && parser_->flow_close) parser_->flow_close(state_);
  state_ = nullptr;
  parser_ = ParserHandle();  // may unload the library: after flow_close
}

int ParserFlow::parse_request(const uint8_t* buf, size_t len, pd3_access* out, uint32_t max, uint32_t* n,
                              size_t* consumed) {
  *n = 0;
  *consumed = 0;
  if (!parser_) return fail(PD3_E_CLOSED, "the parser flow is closed");
  if (max < PD3_PARSER_MIN_ACCESSES) {
    return fail(PD3_E_INVAL, "parse_request needs room for at least %u accesses, got %u", PD3_PARSER_MIN_ACCESSES, max);
  }
  uint32_t found = 0;
  size_t used = 0;
  const int rc = parser_->parse_request(state_, buf, len, out, max, &found, &used);
  if (rc < 0) return rc;
  const char* defect = rc > 0          ? "returned a positive status"
                       : found > max   ? "reported more accesses than fit"
                       : used > len    ? "consumed more bytes than it was given"
                                       : nullptr;
  for (uint32_t i = 0; !defect && i < found; ++i) {
    const pd3_access& a = out[i];
    if (a.op < PD3_ACCESS_READ || a.op > PD3_ACCESS_DELETE) defect = "returned an unknown access op";
    else if (!a.key && a.key_len > 0) defect = "returned a NULL key";
  }
  if (defect) return fail(PD3_E_PROTOCOL, "parser '%s' broke the ABI: parse_request %s", parser_->name, defect);
  *n = found;
  *consumed = used;
  return PD3_OK;
}

int64_t ParserFlow::resync(const uint8_t* buf, size_t len) {
  if (!parser_) return -1;
  const int64_t at = parser_->resync(state_, buf, len);
  return at >= 0 && uint64_t(at) < len ? at : -1;
}

}  // namespace pd3
