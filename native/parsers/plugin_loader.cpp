// plugin_loader.cpp — built-in lookup, dlopen of user parser libraries and the checks that keep a
// wrong library from ever being called.
#include "parsers/plugin_loader.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/error.hpp"
#include "parsers/binary_parser.hpp"
#include "parsers/record_keys.hpp"
#include "parsers/resp_parser.hpp"
#include "pd3/status.h"

namespace pd3 {

namespace {

// Longest parser name accepted (a bound on reading a plug-in's string).
constexpr size_t kMaxParserName = 256;

// Why a table cannot be used, or nullptr if it can.
const char* table_defect(const pd3_parser& p) {
  if (!p.name) return "it has no name";
  const size_t name_len = strnlen(p.name, kMaxParserName);
  if (name_len == 0 || name_len == kMaxParserName) return "its name is empty or longer than 255 bytes";
  if (!p.parse_request) return "parse_request is missing";
  if (!p.resync) return "resync is missing";
  if (!p.flow_open != !p.flow_close) return "flow_open and flow_close must both be set or both be NULL";
  return nullptr;
}

// Checks a table that came from `origin` (a library path, or "in-process").
int check_table(const pd3_parser* p, const char* origin) {
  if (!p) return fail(PD3_E_INVAL, "parser %s: no parser table (NULL)", origin);
  if (p->abi_version != PD3_PARSER_ABI_VERSION) {
    return fail(PD3_E_BAD_VERSION, "parser %s speaks parser ABI version %u, this build speaks version %u", origin,
                p->abi_version, PD3_PARSER_ABI_VERSION);
  }
  if (const char* defect = table_defect(*p)) return fail(PD3_E_INVAL, "parser %s cannot be used: %s", origin, defect);
  return PD3_OK;
}


}  // namespace

int load_parser(const char* name_or_path, ParserHandle* out) {
  if (!name_or_path || !*name_or_path) return fail(PD3_E_INVAL, "a parser name or library path is required");
  if (std::strcmp(name_or_path, "resp") == 0) {
    *out = ParserHandle(resp_parser(), nullptr);
    return PD3_OK;
  }
  if (std::strcmp(name_or_path, "binary") == 0) {
    *out = ParserHandle(binary_parser(), nullptr);
    return PD3_OK;
  }
  const bool is_path = std::strchr(name_or_path, '/') != nullptr;
  if (is_path && access(name_or_path, F_OK) != 0) {
    return fail(PD3_E_NOT_FOUND, "parser library %s: %s", name_or_path, std::strerror(errno));
  }
  void* lib = dlopen(name_or_path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    if (!is_path) {
      return fail(PD3_E_NOT_FOUND, "no built-in parser named '%s' (built-ins: resp, binary), and the dynamic loader "
                  "found no such library: %s", name_or_path, why ? why : "unknown error");
    }
    return fail(PD3_E_INVAL, "cannot load parser library %s: %s", name_or_path, why ? why : "unknown error");
  }
  std::shared_ptr<void> library(lib, [](void* h) { dlclose(h); });
  dlerror();  // clear, so a NULL from dlsym is told apart from an error
  void* sym = dlsym(lib, PD3_PARSER_ENTRY);
  if (!sym) {
    return fail(PD3_E_INVAL, "parser library %s does not export %s() (declare it extern \"C\" with default visibility)",
                name_or_path, PD3_PARSER_ENTRY);
  }
  const pd3_parser* parser = reinterpret_cast<pd3_parser_entry_fn>(sym)();
  if (!parser) return fail(PD3_E_INVAL, "parser library %s: %s() returned NULL", name_or_path, PD3_PARSER_ENTRY);
  const std::string origin = std::string("library ") + name_or_path;
  if (const int rc = check_table(parser, origin.c_str())) return rc;
  *out = ParserHandle(parser, std::move(library));
  return PD3_OK;
}

int use_parser_table(const pd3_parser* table, ParserHandle* out) {
  if (const int rc = check_table(table, "in-process")) return rc;
  *out = ParserHandle(table, nullptr);
  return PD3_OK;
}

int ParserHandle::parse_record(const uint8_t* buf, size_t len, pd3_record_key* out, uint32_t max, uint32_t* n) const {
  *n = 0;
  if (!parser_) return fail(PD3_E_CLOSED, "no parser loaded");
  if (!parser_->parse_record) return parse_kv_records(buf, len, out, max, n);
  uint32_t found = 0;
  const int rc = parser_->parse_record(buf, len, out, max, &found);
  if (rc < 0) return rc;
  const char* defect = rc > 0 ? "returned a positive status" : found > max ? "reported more keys than fit" : nullptr;
  uint64_t prev_end = 0;
  for (uint32_t i = 0; !defect && i < found; ++i) {
    defect = record_key_defect(out[i], len, prev_end);
    prev_end = out[i].record_off + out[i].record_len;
  }
  if (defect) return fail(PD3_E_PROTOCOL, "parser '%s' broke the ABI: parse_record %s", parser_->name, defect);
  *n = found;
  return PD3_OK;
}

}  // namespace pd3
