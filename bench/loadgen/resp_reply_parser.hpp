// resp_reply_parser.hpp — an incremental parser of RESP2 replies (what a Redis-protocol server
// sends back): simple strings, errors, integers, bulk strings, nil, arrays (nested). Bytes may
// arrive split anywhere; the parser keeps its place between feed() calls and copies only the part
// of a line or bulk string that straddles two calls. It never reads outside the bytes it is given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pd3::loadgen {

// The type of one parsed RESP value.
enum class RespType : uint8_t {
  kSimple,    // +text
  kError,     // -text
  kInteger,   // :n
  kBulk,      // $len payload (text holds the payload)
  kNil,       // $-1
  kArray,     // *n: its n elements follow as values one level deeper (integer holds n)
  kNilArray,  // *-1
};

// One parsed value; `text` points into the fed bytes or the parser's own copy, valid only during
// the on_value call.
struct RespValue {
  RespType type = RespType::kNil;
  int64_t integer = 0;    // kInteger: the number; kArray: the element count
  std::string_view text;  // kSimple, kError: the line; kBulk: the payload
};

// Receives what the parser finds, in stream order.
class RespSink {
 public:
  virtual ~RespSink() = default;
  // A value; depth 0 is a top-level reply, an array's elements are one deeper than the array.
  virtual void on_value(const RespValue& v, uint32_t depth) = 0;
  // A top-level reply is complete (after its last value).
  virtual void on_reply_end() = 0;
};

// Parses a stream of replies; after a framing error it stays failed (the stream has no sync point).
class RespReplyParser {
 public:
  static constexpr size_t kMaxLine = 64 * 1024;            // a header or simple/error line
  static constexpr int64_t kMaxBulk = 512ll * 1024 * 1024;  // as Redis' proto-max-bulk-len
  static constexpr uint32_t kMaxDepth = 32;                 // nested arrays

  // Consumes all n bytes, calling the sink for every complete value. False on a framing error
  // (the bytes are not RESP2); error() says what, and every later call fails too.
  [[nodiscard]] bool feed(const uint8_t* p, size_t n, RespSink& sink);

  bool failed() const { return failed_; }
  const std::string& error() const { return error_; }
  // True between replies (no partial reply held).
  bool idle() const { return state_ == State::kType && stack_.empty(); }

 private:
  // Where the parser is: before a type byte, inside a header/simple line, inside a bulk payload.
  enum class State : uint8_t { kType, kLine, kBulk };

  bool fail(std::string why);
  // A complete header/simple line (without CRLF) of type type_.
  bool on_line(std::string_view line, RespSink& sink);
  // A value that is complete as an element: counts it against the enclosing arrays.
  void element_done(RespSink& sink);
  uint32_t depth() const { return uint32_t(stack_.size()); }

  State state_ = State::kType;
  uint8_t type_ = 0;            // the type byte of the value being read
  std::string line_;            // a line split across feeds
  std::string bulk_;            // a bulk payload (+CRLF) split across feeds
  int64_t bulk_len_ = 0;        // kBulk: payload bytes
  std::vector<int64_t> stack_;  // elements still to come in each open array
  bool failed_ = false;
  std::string error_;
};

}  // namespace pd3::loadgen
