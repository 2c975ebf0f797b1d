// plugin_loader.hpp — finds a parser by name or path: the built-ins ("resp", "binary") or a user's
// shared library exporting PD3_PARSER_ENTRY (pd3/parser.h), checked before use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "pd3/parser.h"

namespace pd3 {

// A parser in use: its ABI table and, for a plug-in, a shared reference to the library holding its
// code, so the library stays mapped while any handle or flow (parser_flow.hpp) still uses it and
// is closed after the last one goes. Copies share the library.
class ParserHandle {
 public:
  ParserHandle() = default;

  const pd3_parser* get() const { return parser_; }
  const pd3_parser* operator->() const { return parser_; }
  explicit operator bool() const { return parser_ != nullptr; }
  // True for a parser loaded from a shared library.
  bool is_plugin() const { return library_ != nullptr; }

  // parseRecord: the parser's parse_record, or the built-in pd3/record.h format when it has none.
  // A plug-in's results are checked (record_key_defect: a record outside buf[0, len), a key or
  // value outside its record, a bad key_len, records out of order), and so are *n > max and a
  // positive return: each becomes PD3_E_PROTOCOL (with pd3_last_error naming the parser), *n = 0.
  // After a full answer (*n == max) continue from the last record's record_off + record_len.
  int parse_record(const uint8_t* buf, size_t len, pd3_record_key* out, uint32_t max, uint32_t* n) const;

 private:
  friend int load_parser(const char* name_or_path, ParserHandle* out);

// Wraps a parser table linked into this program (no library to load) after the same checks as a
// loaded one. Returns PD3_OK, PD3_E_INVAL or PD3_E_BAD_VERSION.
int use_parser_table(const pd3_parser* table, ParserHandle* out);
  friend int use_parser_table(const pd3_parser* table, ParserHandle* out);
  ParserHandle(const pd3_parser* parser, std::shared_ptr<void> library)
      : parser_(parser), library_(std::move(library)) {}

  const pd3_parser* parser_ = nullptr;
  std::shared_ptr<void> library_;  // the dlopen handle; dlclose'd with the last copy
};

// "resp" and "binary" give the built-in parsers; anything else is a shared library path (or a name
// the dynamic loader searches for, e.g. "libmyparser.so"), loaded with RTLD_NOW | RTLD_LOCAL, its
// PD3_PARSER_ENTRY called, and the table checked: ABI version, a name, parse_request and resync,
// flow_open and flow_close both or neither. Returns PD3_OK, PD3_E_INVAL (empty name, not a
// loadable library, missing symbol, NULL table, missing function), PD3_E_NOT_FOUND (no such file)
// or PD3_E_BAD_VERSION (another ABI version); pd3_last_error() says which and why. *out is
// unchanged on failure.
int load_parser(const char* name_or_path, ParserHandle* out);

// Wraps a parser table linked into this program (no library to load) after the same checks as a
// loaded one. Returns PD3_OK, PD3_E_INVAL or PD3_E_BAD_VERSION.
int use_parser_table(const pd3_parser* table, ParserHandle* out);

}  // namespace pd3
