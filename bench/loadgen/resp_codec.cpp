// resp_codec.cpp — RESP requests (GET, SET, MGET as arrays of bulk strings) and the mapping of
// RESP replies to entries: bulk → value, nil → not found, +OK → stored, -ERR → error; an array's
// elements are one entry each (MGET); anything else is unexpected.
#include <cstdio>
#include <cstring>

#include "codec.hpp"
#include "key_text.hpp"
#include "resp_reply_parser.hpp"

namespace pd3::loadgen {

namespace {

// Appends "$<key length>\r\n<key>\r\n".
inline void append_key(ByteBuffer& out, uint64_t key) {
  static constexpr char kHead[] = "$16\r\n";
  static_assert(kKeyLength == 16, "kHead spells the key length");
  uint8_t* p = out.reserve(sizeof(kHead) - 1 + kKeyLength + 2);
  std::memcpy(p, kHead, sizeof(kHead) - 1);
  p += sizeof(kHead) - 1;
  write_text_key(key, reinterpret_cast<char*>(p));
  p[kKeyLength] = '\r';
  p[kKeyLength + 1] = '\n';
  out.commit(sizeof(kHead) - 1 + kKeyLength + 2);
}

void append_text(ByteBuffer& out, const char* s) { out.append(s, std::strlen(s)); }

// GET / SET / MGET over text keys.
class RespEncoder final : public RequestEncoder {
 public:
  explicit RespEncoder(uint32_t value_size) {
    std::snprintf(value_head_, sizeof value_head_, "$%u\r\n", value_size);
  }

  void read(ByteBuffer& out, uint64_t key) const override {
    append_text(out, "*2\r\n$3\r\nGET\r\n");
    append_key(out, key);
  }

  void write(ByteBuffer& out, uint64_t key, const ValueFormat& values, uint64_t version) const override {
    append_text(out, "*3\r\n$3\r\nSET\r\n");
    append_key(out, key);
    append_text(out, value_head_);
    uint8_t* p = out.reserve(values.size() + 2);
    values.write(key, version, p);
    p[values.size()] = '\r';
    p[values.size() + 1] = '\n';
    out.commit(values.size() + 2);
  }

  void read_run(ByteBuffer& out, uint64_t first_key, uint32_t count) const override {
    char head[32];
    std::snprintf(head, sizeof head, "*%u\r\n$4\r\nMGET\r\n", count + 1);
    append_text(out, head);
    for (uint32_t i = 0; i < count; ++i) append_key(out, first_key + i);
  }

  std::string key_name(uint64_t key) const override {
    char k[kKeyLength + 1];
    write_text_key(key, k);
    k[kKeyLength] = '\0';
    return k;
  }

 private:
  char value_head_[24];
};

// Adapts the RESP parser's values to entries: top-level arrays contribute their elements.
class RespDecoder final : public ReplyDecoder, private RespSink {
 public:
  bool feed(const uint8_t* p, size_t n, EntrySink& sink) override {
    sink_ = &sink;
    return parser_.feed(p, n, *this);
  }
  const std::string& error() const override { return parser_.error(); }

 private:
  void on_value(const RespValue& v, uint32_t depth) override {
    if (depth == 0 && v.type == RespType::kArray) return;  // its elements are the entries
    if (depth >= 2) return;  // inside a nested array: reported once, as the array's own entry
    ReplyEntry e;
    e.element = depth == 1;
    switch (v.type) {
      case RespType::kBulk:
        e.kind = EntryKind::kValue;
        e.bytes = v.text;
        break;
      case RespType::kNil: e.kind = EntryKind::kNil; break;
      case RespType::kError:
        e.kind = EntryKind::kError;
        e.bytes = v.text;
        break;
      case RespType::kSimple:
        e.kind = v.text == "OK" ? EntryKind::kOk : EntryKind::kUnexpected;
        e.bytes = v.text;
        break;
      case RespType::kInteger:
        e.kind = EntryKind::kUnexpected;
        e.bytes = "an integer reply";
        break;
      case RespType::kNilArray:
        e.kind = EntryKind::kUnexpected;
        e.bytes = "a nil array";
        break;
      case RespType::kArray:
        e.kind = EntryKind::kUnexpected;
        e.bytes = "a nested array";
        break;
    }
    sink_->on_entry(e);
  }

  void on_reply_end() override { sink_->on_reply_end(); }

  RespReplyParser parser_;
  EntrySink* sink_ = nullptr;
};

}  // namespace

std::unique_ptr<RequestEncoder> make_resp_encoder(uint32_t value_size) {
  return std::make_unique<RespEncoder>(value_size);
}
std::unique_ptr<ReplyDecoder> make_resp_decoder() { return std::make_unique<RespDecoder>(); }

}  // namespace pd3::loadgen
