// request_reader.cpp — validation of pd3/binproto.h requests (the same rules as the agent's binary
// parser, native/parsers/binary_parser.cpp: a request the server accepts is one the agent parses).
#include "request_reader.hpp"

#include <cstring>

namespace pd3::hashmap {

namespace {

constexpr size_t kLengthField = sizeof(uint32_t);
constexpr size_t kHeader = sizeof(pd3_bin_header);
// The smallest entry: a 1-byte key, plus the value length for PUT.
constexpr uint32_t min_entry(uint8_t op) { return op == PD3_BIN_PUT ? 2 + 1 + 4 : 2 + 1; }

// Checks the header fields present in p[0, avail). Empty string: fine so far.
std::string check_header(const uint8_t* p, size_t avail, pd3_bin_header* h) {
  std::memset(h, 0, sizeof *h);
  std::memcpy(h, p, avail < kHeader ? avail : kHeader);
  if (avail >= 4 && h->length < kHeader - kLengthField) return "length " + std::to_string(h->length) + " below the header";
  if (avail >= 4 && h->length > PD3_BIN_MAX_REQUEST) {
    return "length " + std::to_string(h->length) + " above PD3_BIN_MAX_REQUEST (" + std::to_string(PD3_BIN_MAX_REQUEST) + ")";
  }
  if (avail >= 5 && h->magic != PD3_BIN_MAGIC) return "bad magic " + std::to_string(h->magic);
  if (avail >= 6 && (h->op < PD3_BIN_GET || h->op > PD3_BIN_DEL)) return "unknown op " + std::to_string(h->op);
  if (avail >= kHeader && uint64_t(h->count) * min_entry(h->op) > h->length - (kHeader - kLengthField)) {
    return "count " + std::to_string(h->count) + " does not fit in length " + std::to_string(h->length);
  }
  return {};
}

// Parses the body of a complete request. Empty string: ok.
std::string read_body(const pd3_bin_header& h, const uint8_t* body, size_t body_len, std::vector<Entry>* entries) {
  size_t pos = 0;
  for (uint32_t i = 0; i < h.count; ++i) {
    Entry e;
    uint16_t key_len;
    if (body_len - pos < 2) return "entry " + std::to_string(i) + " runs past the request";
    std::memcpy(&key_len, body + pos, 2);
    pos += 2;
    if (key_len == 0) return "entry " + std::to_string(i) + " has an empty key";
    if (body_len - pos < key_len) return "entry " + std::to_string(i) + " key runs past the request";
    if (key_len == kKeyBytes) e.key = load_u64(body + pos);
    else e.check = EntryStatus::kBadKey;
    pos += key_len;
    if (h.op == PD3_BIN_PUT) {
      uint32_t value_len;
      if (body_len - pos < 4) return "entry " + std::to_string(i) + " runs past the request";
      std::memcpy(&value_len, body + pos, 4);
      pos += 4;
      if (body_len - pos < value_len) return "entry " + std::to_string(i) + " value runs past the request";
      if (value_len == kValueBytes) e.value = load_u64(body + pos);
      else if (e.check == EntryStatus::kOk) e.check = EntryStatus::kBadValue;
      pos += value_len;
    }
    entries->push_back(e);
  }
  if (pos != body_len) return std::to_string(body_len - pos) + " bytes after the last entry";
  return {};
}

}  // namespace

ParseOutcome parse_requests(const uint8_t* buf, size_t len, std::vector<Request>* requests,
                            std::vector<Entry>* entries, size_t* consumed, std::string* why) {
  size_t done = 0;
  while (done < len) {
    const uint8_t* p = buf + done;
    const size_t avail = len - done;
    pd3_bin_header h;
    *why = check_header(p, avail, &h);
    if (!why->empty()) break;
    const size_t total = kLengthField + size_t(h.length);
    if (avail < kHeader || avail < total) break;  // the rest has not arrived yet
    const size_t first = entries->size();
    *why = read_body(h, p + kHeader, total - kHeader, entries);
    if (!why->empty()) {
      entries->resize(first);
      break;
    }
    requests->push_back({h.op, h.count, first});
    done += total;
  }
  *consumed = done;
  return why->empty() ? ParseOutcome::kOk : ParseOutcome::kMalformed;
}

}  // namespace pd3::hashmap
