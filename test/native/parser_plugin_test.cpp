// parser_plugin_test.cpp — the parser loader and flows: built-ins by name, a real plug-in library
// (test/plugins/example_parser.cpp) with per-flow state, every refusal with its reason, library
// lifetime, and the checks that turn a plug-in's ABI violations into errors.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../fuzz/parser_target.hpp"
#include "harness.hpp"
#include "parsers/parser_flow.hpp"
#include "parsers/plugin_loader.hpp"
#include "pd3/status.h"
#include "util.hpp"

namespace {

using pd3fuzz::ParsedAccess;
constexpr uint32_t R = PD3_ACCESS_READ, W = PD3_ACCESS_WRITE, D = PD3_ACCESS_DELETE;

using pd3test::plugin_dir;

// Path of the example plug-in built with `suffix` ("" for the working one).
std::string plugin(const char* suffix) { return plugin_dir() + "/libpd3_example_parser" + suffix + ".so"; }

// Fails the case, saying how to build the plug-ins, when they are missing.
bool have_plugins() {
  if (access(plugin("").c_str(), R_OK) == 0) return true;
  std::fprintf(stderr, "  %s is missing: build the pd3_example_parser targets (docs/parsers.md), or set "
               "PD3_EXAMPLE_PARSER to the library's path\n", plugin("").c_str());
  return false;
}

const uint8_t* bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

// Parses `s` whole through a flow, like the agent: accesses copied, status of the last call.
struct FlowParse {
  std::vector<ParsedAccess> accesses;
  size_t consumed = 0;
  int status = PD3_OK;
  bool keys_inside = true;  // every key pointed into `s`
};
FlowParse parse(pd3::ParserFlow& flow, const std::string& s) {
  FlowParse r;
  pd3_access out[PD3_PARSER_MIN_ACCESSES];
  for (;;) {
    uint32_t n = 0;
    size_t consumed = 0;
    r.status = flow.parse_request(bytes(s) + r.consumed, s.size() - r.consumed, out, PD3_PARSER_MIN_ACCESSES, &n, &consumed);
    for (uint32_t i = 0; i < n; ++i) {
      r.accesses.push_back({std::string(reinterpret_cast<const char*>(out[i].key), out[i].key_len), out[i].op});
      r.keys_inside &= out[i].key >= bytes(s) && out[i].key + out[i].key_len <= bytes(s) + s.size();
    }
    r.consumed += consumed;
    if (r.status != PD3_OK || consumed == 0) break;
  }
  return r;
}

// Loads `what` expecting failure with `status` and a pd3_last_error() containing `reason`.
bool refused(const char* what, int status, const char* reason) {
  pd3::ParserHandle h;
  const int rc = pd3::load_parser(what, &h);
  const bool ok = rc == status && !h && std::strstr(pd3_last_error(), reason) != nullptr;
  if (!ok) std::fprintf(stderr, "  load_parser(%s) = %s: %s\n", what ? what : "NULL", pd3_status_name(rc), pd3_last_error());
  return ok;
}

// True while `path` is loaded in this process.
bool library_loaded(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h) dlclose(h);
  return h != nullptr;
}

}  // namespace

TEST(plugin_loader_gives_the_builtins_by_name) {
  for (const char* name : {"resp", "binary"}) {
    pd3::ParserHandle h;
    REQUIRE(pd3::load_parser(name, &h) == PD3_OK);
    CHECK(h && !h.is_plugin() && std::strcmp(h->name, name) == 0);
    pd3::ParserFlow flow;
    REQUIRE(pd3::ParserFlow::open(h, &flow) == PD3_OK);
  }
  pd3::ParserHandle resp;
  REQUIRE(pd3::load_parser("resp", &resp) == PD3_OK);
  pd3::ParserFlow flow;
  REQUIRE(pd3::ParserFlow::open(resp, &flow) == PD3_OK);
  const FlowParse r = parse(flow, "*2\r\n$3\r\nGET\r\n$1\r\nk\r\nDEL a b\r\n");
  CHECK((r.accesses == std::vector<ParsedAccess>{{"k", R}, {"a", D}, {"b", D}}));
  CHECK(r.keys_inside && r.status == PD3_OK);
}

TEST(plugin_loader_refuses_with_a_clear_reason) {
  CHECK(refused(nullptr, PD3_E_INVAL, "required"));
  CHECK(refused("", PD3_E_INVAL, "required"));
  CHECK(refused("/nonexistent/dir/libparser.so", PD3_E_NOT_FOUND, "/nonexistent/dir/libparser.so: No such file"));
  CHECK(refused("no-such-parser", PD3_E_NOT_FOUND, "no built-in parser named 'no-such-parser'"));
  // A file that is not a shared library.
  char text[] = "/tmp/pd3-parser-test-XXXXXX";
  const int fd = mkstemp(text);
  REQUIRE(fd >= 0);
  CHECK(write(fd, "not an ELF file\n", 16) == 16);
  close(fd);
  CHECK(refused(text, PD3_E_INVAL, "cannot load parser library"));
  unlink(text);
  // A real library without the entry point.
  CHECK(refused("libm.so.6", PD3_E_INVAL, "does not export pd3_parser_entry()"));
}

TEST(plugin_loader_refuses_broken_plugins) {
  REQUIRE(have_plugins());
  CHECK(refused(plugin("_bad_abi").c_str(), PD3_E_BAD_VERSION, "speaks parser ABI version 2, this build speaks version 1"));
  CHECK(refused(plugin("_no_parse_request").c_str(), PD3_E_INVAL, "parse_request is missing"));
  CHECK(refused(plugin("_null_entry").c_str(), PD3_E_INVAL, "pd3_parser_entry() returned NULL"));
  // A refused library is not kept loaded, and a failed load leaves the handle as it was.
  CHECK(!library_loaded(plugin("_bad_abi")));
  pd3::ParserHandle h;
  REQUIRE(pd3::load_parser("resp", &h) == PD3_OK);
  CHECK(pd3::load_parser(plugin("_null_entry").c_str(), &h) == PD3_E_INVAL);
  CHECK(h && std::strcmp(h->name, "resp") == 0);
}

TEST(plugin_example_parses_with_per_flow_state) {
  REQUIRE(have_plugins());
  pd3::ParserHandle h;
  REQUIRE(pd3::load_parser(plugin("").c_str(), &h) == PD3_OK);
  CHECK(h.is_plugin() && std::strcmp(h->name, "example-lines") == 0);
  pd3::ParserFlow a, b;
  REQUIRE(pd3::ParserFlow::open(h, &a) == PD3_OK);
  REQUIRE(pd3::ParserFlow::open(h, &b) == PD3_OK);
  const FlowParse plain = parse(a, "GET x\nPUT y 1\nDEL z\n");
  CHECK((plain.accesses == std::vector<ParsedAccess>{{"x", R}, {"y", W}, {"z", D}}));
  CHECK(plain.keys_inside && plain.consumed == 20);
  // USE on flow a names a's later keys (built in flow memory); flow b is untouched.
  const FlowParse ns = parse(a, "USE tenant\nGET x\nPUT y 2\n");
  CHECK((ns.accesses == std::vector<ParsedAccess>{{"tenant:x", R}, {"tenant:y", W}}));
  CHECK(!ns.keys_inside);
  CHECK((parse(b, "GET x\n").accesses == std::vector<ParsedAccess>{{"x", R}}));
  // A line still arriving is not consumed; a bad one is the plug-in's protocol error.
  const FlowParse partial = parse(b, "GET x\nGET y");
  CHECK(partial.consumed == 6 && partial.accesses.size() == 1 && partial.status == PD3_OK);
  const FlowParse bad = parse(b, "FROB x\n");
  CHECK(bad.status == PD3_E_PROTOCOL && bad.consumed == 0);
  const std::string lost = "lue\nGET k\n";
  CHECK_EQ(b.resync(bytes(lost), lost.size()), 4);
  // No parse_record in the plug-in: records are read in the built-in format of pd3/record.h.
  uint8_t rec[4 + 4 + 3 + 2 + 8] = {3, 0, 0, 0, 2, 0, 0, 0, 'k', 'e', 'y', 'v', 'v'};
  pd3_record_key keys[4];
  uint32_t n = 0;
  REQUIRE(h.parse_record(rec, sizeof rec, keys, 4, &n) == PD3_OK);
  CHECK(n == 1 && keys[0].key_off == 8 && keys[0].key_len == 3 && keys[0].value_len == 2);
}

TEST(plugin_library_stays_loaded_while_a_handle_or_flow_uses_it) {
  REQUIRE(have_plugins());
  const std::string path = plugin("");
  REQUIRE(!library_loaded(path));  // earlier cases released theirs
  pd3::ParserFlow flow;
  {
    pd3::ParserHandle h;
    REQUIRE(pd3::load_parser(path.c_str(), &h) == PD3_OK);
    pd3::ParserHandle copy = h;
    CHECK(library_loaded(path));
    REQUIRE(pd3::ParserFlow::open(copy, &flow) == PD3_OK);
  }
  CHECK(library_loaded(path));  // the flow still needs the code
  CHECK((parse(flow, "USE n\nDEL q\n").accesses == std::vector<ParsedAccess>{{"n:q", D}}));
  pd3::ParserFlow moved = std::move(flow);
  CHECK(parse(flow, "GET a\n").status == PD3_E_CLOSED);
  moved.close();
  CHECK(!library_loaded(path));
  CHECK(parse(moved, "GET a\n").status == PD3_E_CLOSED);
}

namespace {

// A parser whose answers break the ABI in the way `g_defect` says, to test ParserFlow's checks.
int g_defect = 0;
uint8_t g_key[1] = {'k'};
int broken_parse(void*, const uint8_t*, size_t len, pd3_access* out, uint32_t max, uint32_t* n, size_t* consumed) {
  out[0] = pd3_access{g_key, 1, PD3_ACCESS_READ};
  *n = 1;
  *consumed = len;
  switch (g_defect) {
    case 1: *consumed = len + 1; break;
    case 2: *n = max + 1; break;
    case 3: out[0].op = 7; break;
    case 4: out[0].key = nullptr; break;
    case 5: return 3;
    default: break;
  }
  return PD3_OK;
}
int64_t broken_resync(void*, const uint8_t*, size_t len) { return g_defect == 6 ? int64_t(len) : -7; }
int broken_record(const uint8_t*, size_t len, pd3_record_key* out, uint32_t, uint32_t* n) {
  out[0] = pd3_record_key{len - 1, len - 1, 2, 1, 0, len - 2, 2};  // the value runs one byte past the record
  *n = 1;
  return PD3_OK;
}
void* failing_open(const pd3_parser*) { return nullptr; }
void unused_close(void*) {}
constexpr pd3_parser kBroken = {PD3_PARSER_ABI_VERSION, 0, "broken", nullptr, nullptr, broken_parse, broken_resync, broken_record};
constexpr pd3_parser kNoFlow = {PD3_PARSER_ABI_VERSION, 0, "noflow", failing_open, unused_close, broken_parse, broken_resync, nullptr};
constexpr pd3_parser kHalfFlow = {PD3_PARSER_ABI_VERSION, 0, "half", failing_open, nullptr, broken_parse, broken_resync, nullptr};

}  // namespace

TEST(parser_flow_turns_abi_violations_into_protocol_errors) {
  pd3::ParserHandle h;
  REQUIRE(pd3::use_parser_table(&kBroken, &h) == PD3_OK);
  pd3::ParserFlow flow;
  REQUIRE(pd3::ParserFlow::open(h, &flow) == PD3_OK);
  pd3_access out[PD3_PARSER_MIN_ACCESSES + 1];
  uint32_t n = 0;
  size_t consumed = 0;
  const uint8_t buf[8] = {};
  g_defect = 0;
  CHECK(flow.parse_request(buf, 8, out, PD3_PARSER_MIN_ACCESSES, &n, &consumed) == PD3_OK && n == 1 && consumed == 8);
  const char* reasons[] = {"", "consumed more bytes", "more accesses than fit", "unknown access op", "NULL key", "positive status"};
  for (g_defect = 1; g_defect <= 5; ++g_defect) {
    const int rc = flow.parse_request(buf, 8, out, PD3_PARSER_MIN_ACCESSES, &n, &consumed);
    CHECK(rc == PD3_E_PROTOCOL && n == 0 && consumed == 0);
    CHECK(std::strstr(pd3_last_error(), reasons[g_defect]) != nullptr);
    CHECK(std::strstr(pd3_last_error(), "parser 'broken' broke the ABI") != nullptr);
  }
  CHECK(flow.parse_request(buf, 8, out, PD3_PARSER_MIN_ACCESSES - 1, &n, &consumed) == PD3_E_INVAL);
  g_defect = 6;
  CHECK_EQ(flow.resync(buf, 8), -1);  // past the end
  g_defect = 0;
  CHECK_EQ(flow.resync(buf, 8), -1);  // below -1
  pd3_record_key keys[2];
  CHECK(h.parse_record(buf, 8, keys, 2, &n) == PD3_E_PROTOCOL && n == 0);
  CHECK(std::strstr(pd3_last_error(), "a value outside its record") != nullptr);
  // flow_open failing is PD3_E_NOMEM; a table with flow_open but no flow_close is refused.
  REQUIRE(pd3::use_parser_table(&kNoFlow, &h) == PD3_OK);
  CHECK(pd3::ParserFlow::open(h, &flow) == PD3_E_NOMEM);
  CHECK(pd3::use_parser_table(&kHalfFlow, &h) == PD3_E_INVAL);
  CHECK(std::strstr(pd3_last_error(), "flow_open and flow_close") != nullptr);
  CHECK(pd3::use_parser_table(nullptr, &h) == PD3_E_INVAL);
  CHECK(pd3::ParserFlow::open(pd3::ParserHandle(), &flow) == PD3_E_CLOSED);
}
