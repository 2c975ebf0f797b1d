// js_parser_bridge.hpp — a TS parser (the Parser contract of pd3/parsers: openFlow() →
// {parseRequest, resync}) behind the pd3_parser ABI, so the agent's request tap can run it. Every
// call happens on the JS thread (PrefetchPath::pump_external, driven from TS).
#pragma once

#include <napi.h>

#include <memory>
#include <string>

#include "parsers/plugin_loader.hpp"
#include "pd3/parser.h"

namespace pd3addon {

// One TS parser object and the pd3_parser table that calls it.
class JsParserBridge {
 public:
  // `parser` must have a string `name` and an `openFlow` function; throws a TypeError otherwise.
  JsParserBridge(Napi::Env env, Napi::Object parser);
  JsParserBridge(const JsParserBridge&) = delete;
  JsParserBridge& operator=(const JsParserBridge&) = delete;

  // A handle on the table, checked like any parser table (PD3_E_INVAL for an empty name); it
  // must not outlive this bridge.
  int handle(pd3::ParserHandle* out) const;

 private:
  // The table first, so flow_open's `self` leads back to the bridge.
  struct Table {
    pd3_parser table;
    JsParserBridge* owner;
  };
  static_assert(std::is_standard_layout_v<Table>, "flow_open finds the bridge from the table's address");

  static void* flow_open(const pd3_parser* self);

  Table table_{};
  std::string name_;
  Napi::Env env_;
  Napi::ObjectReference parser_;
};

}  // namespace pd3addon
