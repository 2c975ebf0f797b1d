// record_parser.cpp — choosing the built-in format or a plug-in's parse_record, and the checks on
// every plug-in answer.
#include "memserver/record_parser.hpp"

#include "pd3/status.h"

namespace pd3 {

RecordParser::RecordParser(const ParserHandle& parser) {
  if (!parser || parser->parse_record == nullptr || parser->parse_record == &parse_kv_records) return;
  parser_ = parser;
  parse_ = parser->parse_record;
  name_ = parser->name;
  batch_ = std::make_unique<pd3_record_key[]>(kBatch);
}

int load_record_parser(const std::string& name_or_path, ParserHandle* out) {
  if (name_or_path.empty() || name_or_path == "builtin") {
    *out = ParserHandle();
    return PD3_OK;
  }
  return load_parser(name_or_path.c_str(), out);
}

bool RecordParser::call(const uint8_t* buf, size_t len, uint32_t max, uint32_t* n) {
  *n = 0;
  uint32_t found = 0;
  const int rc = parse_(buf, len, batch_.get(), max, &found);
  const char* defect = rc < 0       ? "a negative status"
                       : rc > 0      ? "a positive status"
                       : found > max ? "more keys than asked for"
                                     : nullptr;
  uint64_t prev_end = 0;
  for (uint32_t i = 0; defect == nullptr && i < found; ++i) {
    defect = record_key_defect(batch_[i], len, prev_end);
    if (defect == nullptr) prev_end = batch_[i].record_off + batch_[i].record_len;  // inside len: no overflow
  }
  if (defect != nullptr) {
    ++rejected_;
    last_defect_ = defect;
    return false;
  }
  *n = found;
  return true;
}

bool RecordParser::record_at_start(const uint8_t* buf, size_t len, pd3_record_key* out) {
  if (parse_ == nullptr) {
    uint64_t pos = 0;
    pd3_kv_entry e;
    if (!pd3_kv_next(buf, len, &pos, &e)) return false;
    *out = record_key_of(e);
    return true;
  }
  uint32_t n = 0;
  if (!call(buf, len, 1, &n) || n == 0 || batch_[0].record_off != 0) return false;
  *out = batch_[0];
  return true;
}

bool RecordParser::probe_record_at_start(const uint8_t* buf, size_t len, pd3_record_key* out) {
  const uint64_t rejected = rejected_;
  const char* defect = last_defect_;
  const bool found = record_at_start(buf, len, out);
  rejected_ = rejected;
  last_defect_ = defect;
  return found;
}

}  // namespace pd3
