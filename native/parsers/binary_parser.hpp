// binary_parser.hpp — the built-in parser ("binary") of the example apps' length-prefixed request
// format (pd3/binproto.h). Stateless (flow_open is NULL).
#pragma once

#include "pd3/parser.h"

namespace pd3 {

// The parser table (static storage, never NULL).
const pd3_parser* binary_parser();

}  // namespace pd3
