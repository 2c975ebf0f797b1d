// resp_tokenizer.cpp — Redis' inline argument rules, without copying: an argument is reported by
// position when its bytes are its value, and as inexact when quotes or escapes change them.
#include "parsers/resp_tokenizer.hpp"

namespace pd3 {

namespace {

// isspace() in the C locale, which Redis uses to skip between arguments.
bool is_space(uint8_t c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
// What ends an unquoted argument in Redis (a narrower set than is_space).
bool ends_word(uint8_t c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == 0; }
bool is_hex(uint8_t c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

}  // namespace

RespTokenizer::Step RespTokenizer::next(RespArg* out) {
  while (p_ < end_ && is_space(*p_)) ++p_;
  if (p_ == end_ || *p_ == 0) return Step::kEnd;
  if (*p_ == '"' || *p_ == '\'') {
    const uint8_t quote = *p_++;
    return quoted(quote, p_, true, out);
  }
  const uint8_t* start = p_;
  while (p_ < end_ && !ends_word(*p_)) {
    if (*p_ == '"' || *p_ == '\'') {
      const uint8_t quote = *p_++;
      return quoted(quote, start, false, out);  // word"quoted": the value skips the quote
    }
    ++p_;
  }
  *out = RespArg{start, size_t(p_ - start), true};
  return Step::kArg;
}

// Inside quotes from p_ to the closing quote, which must be followed by a space or the end.
RespTokenizer::Step RespTokenizer::quoted(uint8_t quote, const uint8_t* start, bool exact, RespArg* out) {
  for (;;) {
    if (p_ == end_ || *p_ == 0) return Step::kUnbalanced;
    const bool has_next = p_ + 1 < end_ && p_[1] != 0;
    if (quote == '"' && *p_ == '\\' && has_next) {
      exact = false;  // \n, \xHH, \" ...: the value differs from the bytes
      p_ += (p_[1] == 'x' && p_ + 3 < end_ && is_hex(p_[2]) && is_hex(p_[3])) ? 4 : 2;
    } else if (quote == '\'' && *p_ == '\\' && has_next && p_[1] == '\'') {
      exact = false;
      p_ += 2;
    } else if (*p_ == quote) {
      const uint8_t* close = p_++;
      if (p_ < end_ && *p_ != 0 && !is_space(*p_)) return Step::kUnbalanced;
      *out = RespArg{start, size_t(close - start), exact};
      return Step::kArg;
    } else {
      ++p_;
    }
  }
}

}  // namespace pd3
