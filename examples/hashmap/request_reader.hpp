// request_reader.hpp — the server's side of pd3/binproto.h: takes every complete request from a
// connection's bytes, or says why the stream is malformed (then the connection is closed: after a
// framing error no later byte can be trusted to start a request). Entries with a key or value of
// the wrong length are well-formed and get a per-entry status instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "protocol.hpp"

namespace pd3::hashmap {

// One entry of a request.
struct Entry {
  uint64_t key = 0;
  uint64_t value = 0;        // PUT
  EntryStatus check = EntryStatus::kOk;  // kBadKey / kBadValue when the entry cannot be executed
};

// One request: `count` entries from `first` in the entry list.
struct Request {
  uint8_t op;
  uint16_t count;
  size_t first;
};

// What parsing a buffer found.
enum class ParseOutcome { kOk, kMalformed };

// Appends every complete request at the start of buf[0, len) to `requests` / `entries` and sets
// *consumed to their bytes. kMalformed (reason in *why) when the bytes at *consumed cannot be a
// request; requests before it are still returned. Checks what has arrived as early as possible:
// a bad length, magic, op or count is refused before the rest of the request is waited for.
ParseOutcome parse_requests(const uint8_t* buf, size_t len, std::vector<Request>* requests,
                            std::vector<Entry>* entries, size_t* consumed, std::string* why);

}  // namespace pd3::hashmap
