// trace_file.hpp — the registration trace format shared by `bench tier` (writer) and `bench mrrc
// --trace FILE` (reader): a text file whose first line is "# pd3 registration trace v1", then one
// registration per line, "<address> <length>", both decimal bytes (the address is the offset of a
// frame in the frame pool). Blank lines and lines starting with '#' after the header are ignored.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pd3::mrrc {

inline constexpr std::string_view kTraceHeader = "# pd3 registration trace v1";

// One registration of a trace.
struct TraceRequest {
  uint64_t addr = 0;
  uint64_t len = 0;
};

// Parses a whole trace. On failure returns false and sets `error` to "line N: what is wrong"
// (a missing or different header, a field that is not a decimal number, a zero length, an address
// range that wraps 64 bits, trailing text).
bool parse_trace(std::string_view text, std::vector<TraceRequest>* out, std::string* error);

// One line of a trace, with its newline ("<address> <length>\n").
std::string format_trace_line(const TraceRequest& r);

}  // namespace pd3::mrrc
