// codec.hpp — what the load generator needs from a wire protocol: encoders for the three request
// shapes it sends (read one key, write one key, read a run of keys) and a decoder that turns the
// server's bytes into per-key reply entries, the same for RESP and the hash map's binary protocol.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "byte_buffer.hpp"
#include "options.hpp"
#include "value_format.hpp"

namespace pd3::loadgen {

// What the server said about one key of a request.
enum class EntryKind : uint8_t {
  kValue,     // a read found the key: bytes = the value
  kNil,       // a read did not find it
  kOk,        // a write was stored
  kError,     // the server refused or failed the request: bytes = its message
  kUnexpected,  // well-framed but not an answer to this request (e.g. an integer to GET): bytes = what
};

// One reply entry; bytes are valid only during the call that delivers it.
struct ReplyEntry {
  EntryKind kind = EntryKind::kNil;
  std::string_view bytes;
  bool element = false;  // RESP: an element of an array reply (MGET's answer); binary: always false
};

// Receives decoded replies in order: a reply's entries, then its end.
class EntrySink {
 public:
  virtual ~EntrySink() = default;
  virtual void on_entry(const ReplyEntry& e) = 0;
  virtual void on_reply_end() = 0;
};

// Turns a connection's received bytes into entries; one per connection (it keeps partial replies).
class ReplyDecoder {
 public:
  virtual ~ReplyDecoder() = default;
  // Consumes n bytes. False on a framing error (error() says what; the connection is unusable).
  [[nodiscard]] virtual bool feed(const uint8_t* p, size_t n, EntrySink& sink) = 0;
  virtual const std::string& error() const = 0;
};

// Appends requests to a connection's output buffer; stateless, shared by every connection.
class RequestEncoder {
 public:
  virtual ~RequestEncoder() = default;
  virtual void read(ByteBuffer& out, uint64_t key) const = 0;
  virtual void write(ByteBuffer& out, uint64_t key, const ValueFormat& values, uint64_t version) const = 0;
  // Keys first_key .. first_key + count − 1 in one request (a SCAN).
  virtual void read_run(ByteBuffer& out, uint64_t first_key, uint32_t count) const = 0;
  // A key as text for messages ("user000000000042", or the number for binary keys).
  virtual std::string key_name(uint64_t key) const = 0;
};

std::unique_ptr<RequestEncoder> make_encoder(Protocol p, uint32_t value_size);
std::unique_ptr<ReplyDecoder> make_decoder(Protocol p);

// The implementations (resp_codec.cpp, binary_codec.cpp), for make_encoder / make_decoder and tests.
std::unique_ptr<RequestEncoder> make_resp_encoder(uint32_t value_size);
std::unique_ptr<ReplyDecoder> make_resp_decoder();
std::unique_ptr<RequestEncoder> make_binary_encoder();
std::unique_ptr<ReplyDecoder> make_binary_decoder();

}  // namespace pd3::loadgen
