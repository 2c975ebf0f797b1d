// resp_commands.cpp — the RESP command table and its case-insensitive lookup (a compile-time open
// addressing table: one hash and usually one compare per request, no allocation).
#include "parsers/resp_commands.hpp"

#include <array>
#include <iterator>

#include "pd3/parser.h"

namespace pd3 {

namespace {

constexpr uint32_t R = PD3_ACCESS_READ, W = PD3_ACCESS_WRITE, D = PD3_ACCESS_DELETE;
constexpr KeyShape kFirst = KeyShape::kFirst, kAll = KeyShape::kAll, kPairs = KeyShape::kPairs;
constexpr ArgcParity kAny = ArgcParity::kAny, kOdd = ArgcParity::kOdd, kEven = ArgcParity::kEven;

// Read-modify-write is READ (pd3/parser.h): the host needs the current value first.
constexpr RespCommand kCommands[] = {
    // Strings.
    {"GET", kFirst, R, 2, kAny},
    {"GETEX", kFirst, R, -2, kAny},
    {"GETSET", kFirst, R, 3, kAny},        // returns the old value: read-modify-write
    {"GETDEL", kFirst, D, 2, kAny},        // the key is gone afterwards: invalidate, never prefetch
    {"SET", KeyShape::kSet, W, -3, kAny},  // READ with the GET option (returns the old value)
    {"SETNX", kFirst, W, 3, kAny},
    {"SETEX", kFirst, W, 4, kAny},
    {"PSETEX", kFirst, W, 4, kAny},
    {"MGET", kAll, R, -2, kAny},
    {"MSET", kPairs, W, -3, kOdd},
    {"MSETNX", kPairs, W, -3, kOdd},
    {"INCR", kFirst, R, 2, kAny},
    {"INCRBY", kFirst, R, 3, kAny},
    {"DECR", kFirst, R, 2, kAny},
    {"DECRBY", kFirst, R, 3, kAny},
    {"INCRBYFLOAT", kFirst, R, 3, kAny},
    {"APPEND", kFirst, R, 3, kAny},
    {"SETRANGE", kFirst, R, 4, kAny},
    {"STRLEN", kFirst, R, 2, kAny},
    {"GETRANGE", kFirst, R, 4, kAny},
    // Keyspace.
    {"DEL", kAll, D, -2, kAny},
    {"UNLINK", kAll, D, -2, kAny},
    {"EXISTS", kAll, R, -2, kAny},
    // Expiry: they read or change the key's metadata, which lives with its value on the host.
    {"EXPIRE", kFirst, R, -3, kAny},
    {"PEXPIRE", kFirst, R, -3, kAny},
    {"EXPIREAT", kFirst, R, -3, kAny},
    {"PEXPIREAT", kFirst, R, -3, kAny},
    {"PERSIST", kFirst, R, 2, kAny},
    {"TTL", kFirst, R, 2, kAny},
    {"PTTL", kFirst, R, 2, kAny},
    {"EXPIRETIME", kFirst, R, 2, kAny},
    {"PEXPIRETIME", kFirst, R, 2, kAny},
    // Hashes: one key per hash; changing a field rewrites the hash, so writes are read-modify-write.
    {"HGET", kFirst, R, 3, kAny},
    {"HMGET", kFirst, R, -3, kAny},
    {"HGETALL", kFirst, R, 2, kAny},
    {"HEXISTS", kFirst, R, 3, kAny},
    {"HLEN", kFirst, R, 2, kAny},
    {"HKEYS", kFirst, R, 2, kAny},
    {"HVALS", kFirst, R, 2, kAny},
    {"HSTRLEN", kFirst, R, 3, kAny},
    {"HSET", kFirst, R, -4, kEven},
    {"HMSET", kFirst, R, -4, kEven},
    {"HSETNX", kFirst, R, 4, kAny},
    {"HDEL", kFirst, R, -3, kAny},
    {"HINCRBY", kFirst, R, 4, kAny},
    {"HINCRBYFLOAT", kFirst, R, 4, kAny},
};

constexpr size_t kMaxNameLen = 16;
constexpr size_t kSlots = 128;  // power of two, over twice the table: short probe chains
constexpr uint8_t kEmpty = 0xFF;
static_assert(std::size(kCommands) < kSlots / 2 && std::size(kCommands) < kEmpty);

// FNV-1a over upper-case letters.
constexpr uint32_t name_hash(std::string_view upper) {
  uint32_t h = 2166136261u;
  for (const char c : upper) h = (h ^ uint8_t(c)) * 16777619u;
  return h;
}

// Slot → index into kCommands, linear probing.
constexpr std::array<uint8_t, kSlots> build_slots() {
  std::array<uint8_t, kSlots> slots{};
  for (auto& s : slots) s = kEmpty;
  for (size_t i = 0; i < std::size(kCommands); ++i) {
    size_t at = name_hash(kCommands[i].name) & (kSlots - 1);
    while (slots[at] != kEmpty) at = (at + 1) & (kSlots - 1);
    slots[at] = uint8_t(i);
  }
  return slots;
}

constexpr std::array<uint8_t, kSlots> kSlotTable = build_slots();

}  // namespace

bool arity_ok(const RespCommand& cmd, uint64_t argc) {
  const bool count_ok = cmd.arity >= 0 ? argc == uint64_t(cmd.arity) : argc >= uint64_t(-int64_t(cmd.arity));
  if (!count_ok) return false;
  switch (cmd.parity) {
    case ArgcParity::kOdd: return argc % 2 == 1;
    case ArgcParity::kEven: return argc % 2 == 0;
    case ArgcParity::kAny: break;
  }
  return true;
}

const RespCommand* find_resp_command(const uint8_t* name, size_t len) {
  if (len == 0 || len > kMaxNameLen) return nullptr;
  char upper[kMaxNameLen];
  for (size_t i = 0; i < len; ++i) {
    const uint8_t c = name[i];
    if (c >= 'a' && c <= 'z') {
      upper[i] = char(c - ('a' - 'A'));
    } else if (c >= 'A' && c <= 'Z') {
      upper[i] = char(c);
    } else {
      return nullptr;  // every known name is letters only
    }
  }
  const std::string_view key(upper, len);
  for (size_t at = name_hash(key) & (kSlots - 1);; at = (at + 1) & (kSlots - 1)) {
    const uint8_t i = kSlotTable[at];
    if (i == kEmpty) return nullptr;
    if (kCommands[i].name == key) return &kCommands[i];
  }
}

}  // namespace pd3
