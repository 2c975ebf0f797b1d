// example_parser.cpp — a small real parser plug-in (pd3/parser.h) for a line protocol, used by
// test/native/parser_plugin_test.cpp and as a template for users' parsers:
//
//   GET <key>\n   PUT <key> <value>\n   DEL <key>\n   USE <namespace>\n
//
// USE makes later keys of the connection "<namespace>:<key>", so the parser keeps per-flow state
// and hands out keys it built in flow memory. Built with -DPD3_EXAMPLE_DEFECT=<n> it becomes one
// of the broken libraries the loader must refuse (PD3_EXAMPLE_DEFECT=1, 2 or 3, see Defect).
//
// Its data records: by default the built-in format of pd3/record.h (parse_record is NULL). Built
// with -DPD3_EXAMPLE_RECORDS=1 it reads them in its own format instead (parse_record), which the
// memory server then indexes with (pd3-memserver --record-parser), packed back to back:
//
//   u8 0xE5 | u16 key_len | key | u32 value_len | value      (little-endian, key_len >= 1)
//
// A byte other than 0xE5 where a record would start ends the sequence (a zero-filled tail does).
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
#ifndef PD3_EXAMPLE_RECORDS
#define PD3_EXAMPLE_RECORDS 0
#endif

namespace {

// How this build of the library is broken, for the loader's tests: not at all, a wrong ABI
// version, no parse_request, or an entry point returning NULL.
enum class Defect { kNone = 0, kBadAbi = 1, kNoParseRequest = 2, kNullEntry = 3 };
constexpr Defect kDefect = Defect(PD3_EXAMPLE_DEFECT);
// True when the library reads its data records in its own format (see the top of the file).
constexpr bool kOwnRecords = PD3_EXAMPLE_RECORDS != 0;

constexpr size_t kMaxLine = 4096;

// One connection's state: its namespace, and the keys built by the last call (valid until the next).
struct Flow {
  std::string ns;
  std::deque<std::string> keys;  // a deque never moves its elements, so handed-out pointers stay valid
};

void* flow_open(const pd3_parser*) { return new (std::nothrow) Flow(); }
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

// Bytes of a record's fixed parts: the magic, key_len, value_len.
constexpr uint8_t kRecordMagic = 0xE5;
constexpr uint64_t kRecordOverhead = 1 + 2 + 4;

// Little-endian integer of `n` bytes at p (the caller checked they are inside the buffer).
uint64_t load_le(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

// The records of the format above at the start of buf[0, len), in order, up to max. Stops at a
// byte other than the magic, an empty key or a record cut short by the end of the buffer: any
// bytes give a prefix of the records, and nothing past buf + len is read.
int parse_record(const uint8_t* buf, size_t len, pd3_record_key* out, uint32_t max, uint32_t* n) {
  *n = 0;
  uint64_t at = 0;
  while (*n < max && len - at >= kRecordOverhead && buf[at] == kRecordMagic) {
    const uint64_t key_len = load_le(buf + at + 1, 2);
    if (key_len == 0 || len - at - kRecordOverhead < key_len) break;
    const uint64_t key_off = at + 3;
    const uint64_t value_len = load_le(buf + key_off + key_len, 4);
    const uint64_t value_off = key_off + key_len + 4;
    if (len - value_off < value_len) break;
    const uint64_t record_len = kRecordOverhead + key_len + value_len;
    out[(*n)++] = pd3_record_key{key_off, value_off, value_len, uint32_t(key_len), 0, at, record_len};
    at = value_off + value_len;
  }
  return PD3_OK;
}

constexpr pd3_parser kParser = {
    kDefect == Defect::kBadAbi ? PD3_PARSER_ABI_VERSION + 1 : PD3_PARSER_ABI_VERSION,
    0,
    "example-lines",
    flow_open,
    flow_close,
    kDefect == Defect::kNoParseRequest ? nullptr : parse_request,
    resync,
    kOwnRecords ? parse_record : nullptr,  // NULL: data records use the built-in format of pd3/record.h
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const pd3_parser* pd3_parser_entry(void) {
  return kDefect == Defect::kNullEntry ? nullptr : &kParser;
}
