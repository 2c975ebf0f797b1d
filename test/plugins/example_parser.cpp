// example_parser.cpp — a small real parser plug-in (pd3/parser.h) for a line protocol, used by
// test/native/parser_plugin_test.cpp and as a template for users' parsers:
//
//   GET <key>\n   PUT <key> <value>\n   DEL <key>\n   USE <namespace>\n
//
// USE makes later keys of the connection "<namespace>:<key>", so the parser keeps per-flow state
// and hands out keys it built in flow memory. Built with -DPD3_EXAMPLE_DEFECT=<n> it becomes one
// of the broken libraries the loader must refuse (PD3_EXAMPLE_DEFECT=1, 2 or 3, see Defect).
#include <algorithm>
#include <cstring>
#include <deque>
#include <new>
#include <string>
#include <string_view>

#include "pd3/parser.h"
#include "pd3/status.h"

#ifndef PD3_EXAMPLE_DEFECT
#define PD3_EXAMPLE_DEFECT 0
#endif

namespace {

// How this build of the library is broken, for the loader's tests: not at all, a wrong ABI
// version, no parse_request, or an entry point returning NULL.
enum class Defect { kNone = 0, kBadAbi = 1, kNoParseRequest = 2, kNullEntry = 3 };
constexpr Defect kDefect = Defect(PD3_EXAMPLE_DEFECT);

constexpr size_t kMaxLine = 4096;

// One connection's state: its namespace, and the keys built by the last call (valid until the next).
struct Flow {
  std::string ns;
  std::deque<std::string> keys;  // a deque never moves its elements, so handed-out pointers stay valid
};

void* flow_open() { return new (std::nothrow) Flow(); }
void flow_close(void* flow) { delete static_cast<Flow*>(flow); }

// The next space-separated word of [*p, end), or an empty one.
std::string_view word(const char** p, const char* end) {
  while (*p < end && **p == ' ') ++*p;
  const char* start = *p;
  while (*p < end && **p != ' ') ++*p;
  return {start, size_t(*p - start)};
}

// Parses one line [p, end) (without its '\n'). Returns 0 or PD3_E_PROTOCOL.
int parse_line(Flow* f, const char* p, const char* end, pd3_access* out, uint32_t max, uint32_t* n) {
  const std::string_view verb = word(&p, end);
  const std::string_view key = word(&p, end);
  const std::string_view value = word(&p, end);
  const bool put = verb == "PUT";
  if (key.empty() || word(&p, end).size() != 0 || value.empty() != !put) return PD3_E_PROTOCOL;
  uint32_t op;
  if (verb == "USE") {
    f->ns.assign(key);
    return PD3_OK;
  } else if (verb == "GET") {
    op = PD3_ACCESS_READ;
  } else if (put) {
    op = PD3_ACCESS_WRITE;
  } else if (verb == "DEL") {
    op = PD3_ACCESS_DELETE;
  } else {
    return PD3_E_PROTOCOL;
  }
  if (*n == max) return PD3_OK;  // cut: the caller's array is full
  if (f->ns.empty()) {
    out[(*n)++] = pd3_access{reinterpret_cast<const uint8_t*>(key.data()), uint32_t(key.size()), op};
  } else {
    const std::string& k = f->keys.emplace_back(f->ns + ":" + std::string(key));
    out[(*n)++] = pd3_access{reinterpret_cast<const uint8_t*>(k.data()), uint32_t(k.size()), op};
  }
  return PD3_OK;
}

int parse_request(void* flow, const uint8_t* buf, size_t len, pd3_access* out, uint32_t max, uint32_t* n,
                  size_t* consumed) {
  *n = 0;
  *consumed = 0;
  Flow* f = static_cast<Flow*>(flow);
  try {  // no exception may cross the C ABI
    f->keys.clear();
    const char* const begin = reinterpret_cast<const char*>(buf);
    size_t done = 0;
    while (done < len && *n < max) {
      const char* line = begin + done;
      const size_t window = std::min(len - done, kMaxLine + 1);
      const char* nl = static_cast<const char*>(std::memchr(line, '\n', window));
      if (!nl) {
        if (window > kMaxLine) return done == 0 ? PD3_E_PROTOCOL : PD3_OK;
        break;  // the line has not ended yet
      }
      const uint32_t before = *n;
      const int rc = parse_line(f, line, nl, out, max, n);
      if (rc != PD3_OK) {
        *n = before;
        return done == 0 ? rc : PD3_OK;  // report it when it is first
      }
      done = size_t(nl + 1 - begin);
      *consumed = done;
    }
    return PD3_OK;
  } catch (const std::bad_alloc&) {
    *n = 0;
    *consumed = 0;
    return PD3_E_NOMEM;
  }
}

// Requests start after a line end.
int64_t resync(void*, const uint8_t* buf, size_t len) {
  const void* nl = std::memchr(buf, '\n', len);
  if (!nl) return -1;
  const size_t at = size_t(static_cast<const uint8_t*>(nl) - buf) + 1;
  return at < len ? int64_t(at) : -1;
}

// parse_record is NULL: this protocol's data records use the built-in format of pd3/record.h.
constexpr pd3_parser kParser = {
    kDefect == Defect::kBadAbi ? PD3_PARSER_ABI_VERSION + 1 : PD3_PARSER_ABI_VERSION,
    0,
    "example-lines",
    flow_open,
    flow_close,
    kDefect == Defect::kNoParseRequest ? nullptr : parse_request,
    resync,
    nullptr,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const pd3_parser* pd3_parser_entry(void) {
  return kDefect == Defect::kNullEntry ? nullptr : &kParser;
}
