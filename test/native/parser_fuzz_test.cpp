// parser_fuzz_test.cpp — seeded fuzzing of the built-in parsers through the same property target
// libFuzzer runs (test/fuzz/parser_target.hpp): generated valid streams must decode to exactly the
// keys the generator put in, and random and mutated streams must keep every property.
// Bounded by PD3_FUZZ_ITERS (inputs per parser; docs/parsers.md gives the long runs).
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "../fuzz/parser_target.hpp"
#include "harness.hpp"
#include "parsers/binary_parser.hpp"
#include "parsers/resp_parser.hpp"
#include "pd3/binproto.h"
#include "util.hpp"

namespace {

using pd3fuzz::ParsedAccess;
constexpr uint32_t R = PD3_ACCESS_READ, W = PD3_ACCESS_WRITE, D = PD3_ACCESS_DELETE;

uint64_t iterations(uint64_t dflt) {
  const char* env = std::getenv("PD3_FUZZ_ITERS");
  return env ? std::strtoull(env, nullptr, 10) : dflt;
}

// prefix followed by n in decimal.
std::string numbered(const char* prefix, uint64_t n) {
  std::string s = prefix;
  s += std::to_string(n);
  return s;
}

// A valid stream and the accesses it must give.
struct Sample {
  std::string bytes;
  std::vector<ParsedAccess> want;
};

// Random valid RESP requests: array and inline forms, mixed letter case, binary keys.
class RespGen {
 public:
  explicit RespGen(uint64_t seed) : rng_(seed) {}

  Sample stream(int requests) {
    Sample s;
    for (int i = 0; i < requests; ++i) request(&s);
    return s;
  }

 private:
  uint32_t below(uint32_t n) { return rng_.below(n); }

  std::string key(bool inline_safe) {
    static const char kSafe[] = "abcdefghijklmnopqrstuvwxyz0123456789:_-";
    static const char kAny[] = "ab:\0\r\n*$ \"'\\\xff";
    std::string k;
    for (uint32_t n = 1 + below(12); n > 0; --n)
      k.push_back(inline_safe || below(3) ? kSafe[below(sizeof kSafe - 1)] : kAny[below(sizeof kAny - 1)]);
    return k;
  }

  std::string name(const char* upper) {
    std::string n = upper;
    for (char& c : n)
      if (below(2)) c = char(c | 0x20);
    return n;
  }

  void emit(Sample* s, const std::vector<std::string>& args, bool as_inline) {
    if (as_inline) {
      for (size_t i = 0; i < args.size(); ++i) s->bytes += (i ? " " : "") + args[i];
      s->bytes += below(2) ? "\r\n" : "\n";
      return;
    }
    s->bytes += numbered("*", args.size()) + "\r\n";
    for (const std::string& a : args) s->bytes += numbered("$", a.size()) + "\r\n" + a + "\r\n";
  }

  void request(Sample* s) {
    const bool as_inline = below(5) == 0;
    std::vector<std::string> args;
    auto k = [&](uint32_t op) {
      args.push_back(key(as_inline));
      s->want.push_back({args.back(), op});
    };
    switch (below(10)) {
      case 0: args = {name("GET")}, k(R); break;
      case 1: {
        args = {name("SET")}, args.push_back(key(as_inline)), args.push_back(numbered("v", below(1000)));
        const bool get = below(2);
        if (below(2)) args.push_back(name("EX")), args.push_back("10");
        if (get) args.push_back(name("GET"));
        s->want.push_back({args[1], get ? R : W});
        break;
      }
      case 2: args = {name("DEL")}; for (uint32_t n = 1 + below(4); n > 0; --n) k(D); break;
      case 3: args = {name("MGET")}; for (uint32_t n = 1 + below(6); n > 0; --n) k(R); break;
      case 4:
        args = {name("MSET")};
        for (uint32_t n = 1 + below(4); n > 0; --n) k(W), args.push_back("x");
        break;
      case 5: args = {name("INCRBY")}, k(R), args.push_back("3"); break;
      case 6: args = {name("HSET")}, k(R), args.push_back("f"), args.push_back("v"); break;
      case 7: args = {name("GETDEL")}, k(D); break;
      case 8: args = {name("LPUSH"), key(as_inline), "v"}; break;  // unknown to the parser
      default: args = {name("PING")}; break;
    }
    emit(s, args, as_inline);
  }

  pd3test::Rng rng_;
};

// Random valid binary requests.
class BinaryGen {
 public:
  explicit BinaryGen(uint64_t seed) : rng_(seed) {}

  Sample stream(int requests) {
    Sample s;
    for (int i = 0; i < requests; ++i) request(&s);
    return s;
  }

 private:
  void request(Sample* s) {
    const uint8_t op = uint8_t(1 + rng_.next() % 3);
    std::string body;
    const uint16_t count = uint16_t(rng_.next() % 5);
    for (uint16_t i = 0; i < count; ++i) {
      std::string key(1 + rng_.next() % 16, '\0');
      for (char& c : key) c = char(rng_.next());
      const uint16_t kl = uint16_t(key.size());
      body.append(reinterpret_cast<const char*>(&kl), 2).append(key);
      if (op == PD3_BIN_PUT) {
        const uint32_t vl = uint32_t(rng_.next() % 24);
        body.append(reinterpret_cast<const char*>(&vl), 4).append(vl, 'v');
      }
      s->want.push_back({key, op == PD3_BIN_GET ? R : op == PD3_BIN_PUT ? W : D});
    }
    const uint32_t length = uint32_t(4 + body.size());
    s->bytes.append(reinterpret_cast<const char*>(&length), 4);
    s->bytes.push_back(char(PD3_BIN_MAGIC));
    s->bytes.push_back(char(op));
    s->bytes.append(reinterpret_cast<const char*>(&count), 2);
    s->bytes += body;
  }

  pd3test::Rng rng_;
};

// Flips, replaces, inserts, deletes or duplicates a few bytes.
void mutate(pd3test::Rng& rng, std::string* v) {
  static const char kInteresting[] = "*$\r\n0123456789-\" \xD3\x01\x02\x03\x00\xff";
  const int edits = 1 + int(rng.next() % 4);
  for (int e = 0; e < edits && !v->empty(); ++e) {
    const size_t at = rng.next() % v->size();
    switch (rng.next() % 6) {
      case 0: (*v)[at] = char((*v)[at] ^ (1u << (rng.next() % 8))); break;
      case 1: (*v)[at] = kInteresting[rng.next() % (sizeof kInteresting - 1)]; break;
      case 2: v->insert(at, 1, kInteresting[rng.next() % (sizeof kInteresting - 1)]); break;
      case 3: v->erase(at, 1 + rng.next() % 4); break;
      case 4: v->insert(at, v->substr(at, 1 + rng.next() % 16)); break;
      default: v->resize(at); break;
    }
  }
}

// The fuzz input for a stream: two control bytes (piece size, split point), then the stream.
std::string input(pd3test::Rng& rng, const std::string& stream) {
  std::string in(2, '\0');
  in[0] = char(rng.next()), in[1] = char(rng.next());
  return in + stream;
}

size_t run(const pd3_parser* p, const std::string& in) {
  return pd3fuzz::run_parser_input(p, reinterpret_cast<const uint8_t*>(in.data()), in.size());
}

// Feeds n inputs (a quarter random bytes biased to the protocol's characters, the rest mutated
// valid streams) through the target; prints the rate.
template <class Gen>
void fuzz(const char* label, const pd3_parser* p, uint64_t seed, const char* alphabet, size_t alphabet_len) {
  const uint64_t n = iterations(1000000) / pd3test::stress_scale();
  pd3test::Rng rng(seed);
  Gen gen(seed + 1);
  uint64_t accesses = 0, with_keys = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < n; ++i) {
    std::string stream;
    if (i % 4 == 0) {
      stream.resize(rng.next() % 256);
      for (char& c : stream) c = rng.next() % 2 ? alphabet[rng.next() % alphabet_len] : char(rng.next());
    } else {
      stream = gen.stream(1 + int(rng.next() % 6)).bytes;
      mutate(rng, &stream);
    }
    const size_t got = run(p, input(rng, stream));
    accesses += got;
    with_keys += got > 0;
  }
  const double ms = pd3test::ms_since(t0);
  std::printf("    [%s fuzz] %llu inputs in %.0f ms (%.2f s per million), %llu with keys, %llu accesses\n", label,
              (unsigned long long)n, ms, n ? ms / 1000.0 * 1e6 / double(n) : 0.0, (unsigned long long)with_keys,
              (unsigned long long)accesses);
  CHECK(n == 0 || with_keys > 0);
}

}  // namespace

TEST(parser_fuzz_generated_resp_streams_decode_exactly) {
  RespGen gen(31);
  pd3test::Rng rng(32);
  pd3test::Errors errors{"resp gen"};
  for (int i = 0; i < 3000; ++i) {
    const Sample s = gen.stream(1 + int(rng.next() % 20));
    const auto r = pd3fuzz::parse_stream(pd3::resp_parser(), reinterpret_cast<const uint8_t*>(s.bytes.data()), s.bytes.size());
    if (r.status != PD3_OK || r.consumed != s.bytes.size() || r.accesses != s.want) errors.fail("stream %d differs", i);
    run(pd3::resp_parser(), input(rng, s.bytes));  // and every property holds on it
  }
  CHECK_EQ(errors.n, 0u);
}

TEST(parser_fuzz_generated_binary_streams_decode_exactly) {
  BinaryGen gen(41);
  pd3test::Rng rng(42);
  pd3test::Errors errors{"binary gen"};
  for (int i = 0; i < 3000; ++i) {
    const Sample s = gen.stream(1 + int(rng.next() % 20));
    const auto r = pd3fuzz::parse_stream(pd3::binary_parser(), reinterpret_cast<const uint8_t*>(s.bytes.data()), s.bytes.size());
    if (r.status != PD3_OK || r.consumed != s.bytes.size() || r.accesses != s.want) errors.fail("stream %d differs", i);
    run(pd3::binary_parser(), input(rng, s.bytes));
  }
  CHECK_EQ(errors.n, 0u);
}

TEST(parser_fuzz_resp_random_and_mutated_inputs) {
  static const char kResp[] = "*$\r\n0123456789 \"'\\xGETSDLMgetsdlm";
  fuzz<RespGen>("resp", pd3::resp_parser(), 51, kResp, sizeof kResp - 1);
}

TEST(parser_fuzz_binary_random_and_mutated_inputs) {
  static const char kBinary[] = "\xD3\x01\x02\x03\x00\x04\x08\x10\xff";
  fuzz<BinaryGen>("binary", pd3::binary_parser(), 61, kBinary, sizeof kBinary - 1);
}
