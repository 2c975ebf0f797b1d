// resp_keys.hpp — picks the keys of one RESP request from its arguments as the framing reader
// hands them over, and turns them into accesses (never for a call the server would refuse).
#pragma once

#include <cstddef>
#include <cstdint>

#include "parsers/access_sink.hpp"
#include "parsers/resp_commands.hpp"

namespace pd3 {

// One argument of a request. `exact` is false for an inline token written with escapes: its bytes
// in the buffer are not its value, so it can never be a key.
struct RespArg {
  const uint8_t* data;
  size_t len;
  bool exact;
};

// Key picker for one request at a time: start, then arg for arguments 1..argc-1, then finish.
class RespKeyPicker {
 public:
  // Starts a request of `argc` arguments (the command name included) named `name`.
  void start(const RespArg& name, uint64_t argc);
  // Argument `index` (≥ 1), in order.
  void arg(uint64_t index, const RespArg& a, AccessSink& sink);
  // After the last argument: emits what had to wait for the whole request (SET's key).
  void finish(AccessSink& sink);

 private:
  // SET's options seen so far (Redis' rules: NX/XX exclusive, one expiry kind, GET).
  enum SetOption : uint32_t { kNx = 1, kXx = 2, kGet = 4, kEx = 8, kPx = 16, kExat = 32, kPxat = 64, kKeepTtl = 128 };
  static constexpr uint32_t kExpiry = kEx | kPx | kExat | kPxat | kKeepTtl;
  void set_option(const RespArg& a);

  const RespCommand* cmd_ = nullptr;  // nullptr: this request yields no accesses
  RespArg set_key_{};
  uint32_t set_options_ = 0;
  bool set_needs_value_ = false;  // the previous option (EX, PX, ...) takes the next argument
  bool set_syntax_error_ = false;
};

}  // namespace pd3
