// resp_commands.hpp — the Redis commands the RESP parser knows: where their keys are and what they
// do to them (docs/parsers.md has the table and the reason for every op).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace pd3 {

// Which arguments of a command are keys.
enum class KeyShape : uint8_t {
  kFirst,  // argument 1 only (GET k, HSET k f v ...)
  kAll,    // every argument from 1 (DEL k1 k2 ...)
  kPairs,  // arguments 1, 3, 5 ... of key/value pairs (MSET k1 v1 k2 v2 ...)
  kSet,    // SET k v [options]: argument 1, READ with the GET option, WRITE otherwise
};

// What argc (the name included) must be, besides the arity.
enum class ArgcParity : uint8_t { kAny, kOdd, kEven };

// One known command. Unknown commands are consumed with no accesses.
struct RespCommand {
  std::string_view name;  // upper case
  KeyShape shape;
  uint32_t op;            // PD3_ACCESS_* (kSet decides per request)
  int32_t arity;          // Redis convention: n = exactly n arguments with the name, -n = at least n
  ArgcParity parity;
};

// Whether `argc` arguments (the name included) is a call the server would accept.
bool arity_ok(const RespCommand& cmd, uint64_t argc);

// The command named by name[0, len) in any letter case, or nullptr.
const RespCommand* find_resp_command(const uint8_t* name, size_t len);

}  // namespace pd3
