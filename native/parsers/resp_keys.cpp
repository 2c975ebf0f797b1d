// resp_keys.cpp — key picking per command shape, and SET's option rules (docs/parsers.md).
#include "parsers/resp_keys.hpp"

#include "pd3/parser.h"

namespace pd3 {

namespace {

// True if a[0, len) equals the upper-case word in any letter case.
bool word_is(const RespArg& a, const char* upper, size_t len) {
  if (!a.exact || a.len != len) return false;
  for (size_t i = 0; i < len; ++i) {
    uint8_t c = a.data[i];
    if (c >= 'a' && c <= 'z') c = uint8_t(c - ('a' - 'A'));
    if (c != uint8_t(upper[i])) return false;
  }
  return true;
}

}  // namespace

void RespKeyPicker::start(const RespArg& name, uint64_t argc) {
  cmd_ = name.exact ? find_resp_command(name.data, name.len) : nullptr;
  if (cmd_ && !arity_ok(*cmd_, argc)) cmd_ = nullptr;  // the server refuses it: no keys
  set_key_ = RespArg{};
  set_options_ = 0;
  set_needs_value_ = false;
  set_syntax_error_ = false;
}

void RespKeyPicker::arg(uint64_t index, const RespArg& a, AccessSink& sink) {
  if (!cmd_) return;
  switch (cmd_->shape) {
    case KeyShape::kFirst:
      if (index == 1 && a.exact) sink.add(a.data, a.len, cmd_->op);
      return;
    case KeyShape::kAll:
      if (a.exact) sink.add(a.data, a.len, cmd_->op);
      return;
    case KeyShape::kPairs:
      if (index % 2 == 1 && a.exact) sink.add(a.data, a.len, cmd_->op);
      return;
    case KeyShape::kSet:
      if (index == 1) {
        set_key_ = a;
      } else if (index >= 3) {
        set_option(a);
      }
      return;
  }
}

void RespKeyPicker::set_option(const RespArg& a) {
  if (set_needs_value_) {
    set_needs_value_ = false;  // the number itself: the server checks it, the key is the same
    return;
  }
  uint32_t option = 0;
  if (word_is(a, "NX", 2)) option = kNx;
  else if (word_is(a, "XX", 2)) option = kXx;
  else if (word_is(a, "GET", 3)) option = kGet;
  else if (word_is(a, "EX", 2)) option = kEx;
  else if (word_is(a, "PX", 2)) option = kPx;
  else if (word_is(a, "EXAT", 4)) option = kExat;
  else if (word_is(a, "PXAT", 4)) option = kPxat;
  else if (word_is(a, "KEEPTTL", 7)) option = kKeepTtl;
  const bool conflicts = ((option & (kNx | kXx)) && (set_options_ & (kNx | kXx) & ~option)) ||
                         ((option & kExpiry) && (set_options_ & kExpiry & ~option));
  if (option == 0 || conflicts) set_syntax_error_ = true;
  set_options_ |= option;
  set_needs_value_ = (option & (kEx | kPx | kExat | kPxat)) != 0;
}

void RespKeyPicker::finish(AccessSink& sink) {
  if (!cmd_ || cmd_->shape != KeyShape::kSet) return;
  if (set_syntax_error_ || set_needs_value_ || !set_key_.exact) return;  // refused by the server
  sink.add(set_key_.data, set_key_.len, (set_options_ & kGet) ? PD3_ACCESS_READ : PD3_ACCESS_WRITE);
}

}  // namespace pd3
