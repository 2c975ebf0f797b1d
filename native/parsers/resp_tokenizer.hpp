// resp_tokenizer.hpp — splits one inline RESP command line into arguments the way Redis does
// (sdssplitargs): spaces separate, "double" and 'single' quotes group, a NUL byte ends the line.
#pragma once

#include <cstdint>

#include "parsers/resp_keys.hpp"

namespace pd3 {

// Walks the arguments of line [p, end) (the line ending already removed).
class RespTokenizer {
 public:
  // What next() found.
  enum class Step { kArg, kEnd, kUnbalanced };

  RespTokenizer(const uint8_t* p, const uint8_t* end) : p_(p), end_(end) {}
  // The next argument: its bytes when they are its value (exact), else exact = false (quotes
  // inside a word, or escapes). kUnbalanced: Redis refuses the line (a protocol error).
  Step next(RespArg* out);

 private:
  Step quoted(uint8_t quote, const uint8_t* start, bool exact, RespArg* out);

  const uint8_t* p_;
  const uint8_t* end_;
};

}  // namespace pd3
