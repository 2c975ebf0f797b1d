// loadgen_reply_target.hpp — the property target of pd3-loadgen's RESP reply parser
// (bench/loadgen/resp_reply_parser.hpp), shared by libFuzzer (loadgen_reply_fuzzer.cpp) and the
// seeded runs in test/native/loadgen_resp_reply_test.cpp: for any bytes, feeding them whole, one
// byte at a time, or in chunks of input-derived sizes gives the same values, reply ends and
// verdict; each chunk is passed in its own exactly-sized heap block, so AddressSanitizer catches
// any read past what the parser was given.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_assert.hpp"
#include "resp_reply_parser.hpp"

namespace pd3fuzz {

// Everything the parser reported, as text, plus its verdict.
struct ReplyLog : pd3::loadgen::RespSink {
  std::vector<std::string> events;
  bool ok = true;

  void on_value(const pd3::loadgen::RespValue& v, uint32_t depth) override {
    std::string e = std::to_string(depth) + ":" + std::to_string(int(v.type)) + ":" + std::to_string(v.integer) + ":";
    e.append(v.text.data(), v.text.size());
    PD3_FUZZ_ASSERT(depth <= pd3::loadgen::RespReplyParser::kMaxDepth);
    events.push_back(std::move(e));
  }
  void on_reply_end() override { events.push_back("end"); }
};

// Feeds data in chunks of the given sizes (the last one takes the rest), each copied to its own
// allocation of exactly that size.
inline ReplyLog feed_in_chunks(const uint8_t* data, size_t size, const std::vector<size_t>& sizes) {
  ReplyLog log;
  pd3::loadgen::RespReplyParser parser;
  size_t at = 0;
  for (size_t i = 0; at < size && log.ok; ++i) {
    const size_t n = i < sizes.size() ? std::min(sizes[i], size - at) : size - at;
    std::unique_ptr<uint8_t[]> chunk(new uint8_t[n == 0 ? 1 : n]);
    std::memcpy(chunk.get(), data + at, n);
    log.ok = parser.feed(chunk.get(), n, log);
    at += n;
  }
  PD3_FUZZ_ASSERT(log.ok != parser.failed());
  return log;
}

// The property: the same log however the bytes are split (events up to a failure included).
inline void run_reply_input(const uint8_t* data, size_t size) {
  const ReplyLog whole = feed_in_chunks(data, size, {});
  std::vector<size_t> ones(size, 1);
  const ReplyLog bytewise = feed_in_chunks(data, size, ones);
  PD3_FUZZ_ASSERT(whole.ok == bytewise.ok);
  PD3_FUZZ_ASSERT(whole.events == bytewise.events);
  uint64_t h = 0x9E3779B97F4A7C15ull ^ size;
  for (size_t i = 0; i < size && i < 64; ++i) h = (h ^ data[i]) * 0x100000001B3ull;
  std::vector<size_t> sizes;
  for (size_t covered = 0; covered < size;) {
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    const size_t n = 1 + size_t(h % 23);
    sizes.push_back(n);
    covered += n;
  }
  const ReplyLog chunked = feed_in_chunks(data, size, sizes);
  PD3_FUZZ_ASSERT(whole.ok == chunked.ok);
  PD3_FUZZ_ASSERT(whole.events == chunked.events);
}

}  // namespace pd3fuzz
