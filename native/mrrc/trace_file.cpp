// trace_file.cpp — reading and writing registration traces (trace_file.hpp).
#include "mrrc/trace_file.hpp"

#include <charconv>

namespace pd3::mrrc {
namespace {

// Reads one decimal u64 at the front of `s` (no sign, no leading spaces); advances `s`.
bool take_u64(std::string_view* s, uint64_t* out) {
  const char* first = s->data();
  const char* last = s->data() + s->size();
  if (first == last || *first < '0' || *first > '9') return false;
  auto [ptr, ec] = std::from_chars(first, last, *out);
  if (ec != std::errc{}) return false;
  s->remove_prefix(size_t(ptr - first));
  return true;
}

}  // namespace

bool parse_trace(std::string_view text, std::vector<TraceRequest>* out, std::string* error) {
  out->clear();
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string where = "line " + std::to_string(line_no) + ": ";
    if (line_no == 1) {
      if (line != kTraceHeader) {
        *error = where + "expected the header \"" + std::string(kTraceHeader) + "\"";
        return false;
      }
      continue;
    }
    if (line.empty() || line.front() == '#') continue;
    TraceRequest r;
    if (!take_u64(&line, &r.addr)) {
      *error = where + "the address is not a decimal number of bytes";
      return false;
    }
    if (line.empty() || line.front() != ' ') {
      *error = where + "expected one space between the address and the length";
      return false;
    }
    line.remove_prefix(1);
    if (!take_u64(&line, &r.len)) {
      *error = where + "the length is not a decimal number of bytes";
      return false;
    }
    if (!line.empty()) {
      *error = where + "unexpected text after the length";
      return false;
    }
    if (r.len == 0) {
      *error = where + "zero length";
      return false;
    }
    if (r.addr > UINT64_MAX - r.len) {
      *error = where + "address + length passes 2^64";
      return false;
    }
    out->push_back(r);
  }
  if (line_no == 0) {
    *error = "line 1: empty file (expected the header \"" + std::string(kTraceHeader) + "\")";
    return false;
  }
  return true;
}

std::string format_trace_line(const TraceRequest& r) {
  return std::to_string(r.addr) + " " + std::to_string(r.len) + "\n";
}

}  // namespace pd3::mrrc
