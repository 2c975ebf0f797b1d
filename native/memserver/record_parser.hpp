// record_parser.hpp — the memory server's parseRecord (docs/architecture.md §6, §9): which keys written
// bytes hold, for the key→address index. The built-in format of pd3/record.h, or the parse_record
// of a parser plug-in, whose every answer is checked before the server uses any of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "parsers/plugin_loader.hpp"
#include "parsers/record_keys.hpp"
#include "pd3/parser.h"
#include "pd3/record.h"

namespace pd3 {

// Finds records in a buffer for the index (every WRITE) and re-parses one record (every PREFETCH).
// A plug-in is untrusted as far as bounds go: an answer with a negative or positive status, more
// keys than asked for, or any key breaking pd3/parser.h's rules (record_key_defect) is refused
// whole — nothing of it is used — and counted. Owned by the store's single thread.
class RecordParser {
 public:
  // Keys asked of a plug-in per parse_record call while indexing a write.
  static constexpr uint32_t kBatch = 256;

  // The built-in format of pd3/record.h.
  RecordParser() = default;
  // `parser`'s parse_record. An empty handle, a parser without parse_record, and the built-in
  // parsers (whose parse_record reads pd3/record.h) all give the built-in format, read inline.
  explicit RecordParser(const ParserHandle& parser);

  // Calls visit(const pd3_record_key&) for each record found in buf[0, len), in buffer order,
  // offsets relative to buf. Only records wholly inside buf exist here: the parse starts at buf[0]
  // and never sees a byte past buf + len. A refused plug-in answer ends the walk (the records
  // before it in earlier calls were visited).
  template <class Visit>
  void for_each_record(const uint8_t* buf, size_t len, Visit&& visit);

  // The record that starts at buf[0] of buf[0, len), parsed alone (max 1): true and *out, or false
  // when the bytes there are not a record (or the plug-in's answer was refused, or it named a
  // record that starts later: not the one asked about).
  bool record_at_start(const uint8_t* buf, size_t len, pd3_record_key* out);
  // The same for a probe that a full parse follows when it fails (a record in a page's first
  // bytes): a refused plug-in answer is not counted, since the full parse counts it.
  bool probe_record_at_start(const uint8_t* buf, size_t len, pd3_record_key* out);

  // "builtin", or the plug-in's parser name.
  const std::string& name() const { return name_; }
  bool builtin() const { return parse_ == nullptr; }
  // Plug-in answers refused so far.
  uint64_t rejected() const { return rejected_; }
  // Why the last refused answer was refused (a static string), or nullptr.
  const char* last_defect() const { return last_defect_; }

 private:
  // One checked parse_record call over buf[0, len) with room for `max` keys (into batch_): true
  // and *n, or false after counting a refused answer.
  bool call(const uint8_t* buf, size_t len, uint32_t max, uint32_t* n);

  ParserHandle parser_;  // keeps a plug-in's library loaded while the parser is in use
  int (*parse_)(const uint8_t*, size_t, pd3_record_key*, uint32_t, uint32_t*) = nullptr;  // nullptr: built-in
  std::string name_ = "builtin";
  std::unique_ptr<pd3_record_key[]> batch_;  // kBatch keys, for a plug-in only
  uint64_t rejected_ = 0;
  const char* last_defect_ = nullptr;
};

// The parser pd3-memserver --record-parser names: "builtin" or "" give an empty handle (the built-in
// format); anything else follows load_parser ("resp", "binary", or a parser library). Returns
// load_parser's statuses; pd3_last_error says why.
int load_record_parser(const std::string& name_or_path, ParserHandle* out);

template <class Visit>
void RecordParser::for_each_record(const uint8_t* buf, size_t len, Visit&& visit) {
  if (parse_ == nullptr) {
    uint64_t pos = 0;
    pd3_kv_entry e;
    while (pd3_kv_next(buf, len, &pos, &e)) visit(record_key_of(e));
    return;
  }
  // A full batch may leave records: the next call starts where the batch's last record ended
  // (records come in order without overlap, each at least one byte, so every call moves on).
  uint64_t from = 0;
  for (;;) {
    uint32_t n = 0;
    if (!call(buf + from, len - from, kBatch, &n)) return;
    for (uint32_t i = 0; i < n; ++i) {
      pd3_record_key k = batch_[i];
      k.key_off += from;
      k.value_off += from;
      k.record_off += from;
      visit(k);
    }
    if (n < kBatch) return;
    from += batch_[n - 1].record_off + batch_[n - 1].record_len;
  }
}

}  // namespace pd3
