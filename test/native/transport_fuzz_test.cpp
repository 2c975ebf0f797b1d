// transport_fuzz_test.cpp — seeded fuzzing of the transport decoders (frames, records, hello) and
// of the request-ring record decoder, through the same targets libFuzzer runs (test/fuzz/).
// Inputs: random bytes, and mutations of valid streams so the decoders get past their first checks.
// Bounded by PD3_FUZZ_ITERS (docs/testing.md gives the long runs).
#include <cstdlib>
#include <random>
#include <vector>

#include "../fuzz/request_ring_target.hpp"
#include "../fuzz/transport_target.hpp"
#include "harness.hpp"
#include "raw_ring.hpp"
#include "util.hpp"

namespace {

uint64_t iterations(uint64_t dflt) {
  const char* env = std::getenv("PD3_FUZZ_ITERS");
  return env ? std::strtoull(env, nullptr, 10) : dflt;
}

// A valid stream: a hello, then request and response frames with random records.
std::vector<uint8_t> valid_stream(std::mt19937_64& rng) {
  std::vector<uint8_t> out;
  out.push_back(uint8_t(rng()));  // piece-size byte read by the target
  std::vector<uint8_t> hello;
  // Half the streams greet as a tenant, with its credential.
  const std::string tenant = rng() % 2 ? "tenant-" + std::to_string(rng() % 4) : "";
  REQUIRE(pd3::encode_hello(pd3::tenant_credential(pd3fuzz::kToken, tenant), tenant, 0, &hello));
  out.insert(out.end(), hello.begin(), hello.end());
  pd3::FrameBuilder b(&out);
  const int frames = 1 + int(rng() % 3);
  std::vector<uint8_t> payload(300);
  for (auto& x : payload) x = uint8_t(rng());
  for (int f = 0; f < frames; ++f) {
    const bool requests = rng() % 2;
    b.begin(requests ? PD3_FRAME_REQUEST : PD3_FRAME_RESPONSE, rng());
    const int n = int(rng() % 6);
    for (int i = 0; i < n; ++i) {
      const uint32_t op = uint32_t(rng() % 4);
      const uint32_t len = uint32_t(rng() % payload.size());
      if (requests && op == PD3_OP_PREFETCH) {
        b.prefetch(pd3_op_id(op, i), payload.data(), uint16_t(len ? len : 1), uint32_t(rng()));
      } else if (requests) {
        b.request(pd3_make_request(pd3_op_id(op, i), uint32_t(rng()), uint32_t(rng()), len),
                  payload.data(), op == PD3_OP_WRITE ? len : 0);
      } else if (op == PD3_OP_PREFETCH) {
        b.prefetch_response(pd3_op_id(op, i), 0, payload.data(), uint16_t(len), len / 2, payload.data(), len / 2);
      } else {
        const bool data = op == PD3_OP_READ || op == PD3_OP_CONTROL;
        b.response(pd3_op_id(op, i), 0, len, payload.data(), data ? len : 0);
      }
    }
    b.finish();
  }
  return out;
}

void mutate(std::mt19937_64& rng, std::vector<uint8_t>* v) {
  const int edits = 1 + int(rng() % 4);
  for (int e = 0; e < edits && !v->empty(); ++e) {
    const size_t at = rng() % v->size();
    switch (rng() % 5) {
      case 0: (*v)[at] ^= uint8_t(1u << (rng() % 8)); break;
      case 1: (*v)[at] = uint8_t(rng()); break;
      case 2: v->resize(at); break;                          // truncate
      case 3: v->insert(v->begin() + long(at), uint8_t(rng())); break;  // shift everything after
      default: (*v)[at] = 0xFF; break;
    }
  }
}

}  // namespace

TEST(fuzz_transport_valid_streams_decode_whole) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 2000; ++i) {
    const std::vector<uint8_t> s = valid_stream(rng);
    // hello + every frame accepted: the decoders accept what the encoders produce.
    CHECK(pd3fuzz::run_transport_input(s.data(), s.size()) >= 2);
  }
}

TEST(fuzz_transport_decoders_on_random_and_mutated_streams) {
  std::mt19937_64 rng(12);
  const uint64_t n = iterations(60000) / pd3test::stress_scale();
  uint64_t accepted = 0, rejected_streams = 0;
  for (uint64_t i = 0; i < n; ++i) {
    std::vector<uint8_t> s;
    if (i % 4 == 0) {
      s.resize(rng() % 512);
      for (auto& x : s) x = uint8_t(rng());
    } else {
      s = valid_stream(rng);
      mutate(rng, &s);
    }
    const int got = pd3fuzz::run_transport_input(s.data(), s.size());  // aborts on a violated property
    accepted += uint64_t(got);
    rejected_streams += got == 0;
  }
  std::printf("    [transport fuzz] %llu inputs, %llu frames accepted, %llu inputs with none\n",
              (unsigned long long)n, (unsigned long long)accepted, (unsigned long long)rejected_streams);
  CHECK(accepted > 0);
  CHECK(rejected_streams > 0);
}

TEST(fuzz_request_ring_decoder_through_the_libfuzzer_target) {
  pd3test::ScopedHost host("fuzzreq", pd3_segment_sizes{4096, 4096, 0, 0, 0});
  REQUIRE(host.rc == PD3_OK);
  std::mt19937_64 rng(13);
  const uint64_t n = iterations(100000) / pd3test::stress_scale();
  std::vector<uint8_t> input(4096 + 9);
  uint64_t records = 0;
  for (uint64_t i = 0; i < n; ++i) {
    input.resize(rng() % input.capacity());
    for (auto& x : input) x = uint8_t(rng());
    // Plausible slot headers half the time, so the decoder gets past framing into lengths.
    if (input.size() >= 9 + 16 && rng() % 2) {
      const uint32_t len = uint32_t(16 * (1 + rng() % 8));
      std::memcpy(input.data() + 9 + 8, &len, 4);
      const uint16_t kind = rng() % 4 ? PD3_SLOT_RECORD : PD3_SLOT_PAD;
      std::memcpy(input.data() + 9 + 12, &kind, 2);
    } else if (input.size() >= 9 + 16 + 6 * 16 && rng() % 2) {
      // A batch slot of READs (no payload), framed right, then one byte changed half the time:
      // the decoder gets into the records and their framing.
      // (Seal 0: the target forces the seal at head.)
      const uint32_t len = pd3test::lay_read_batch(input.data() + 9, uint16_t(1 + rng() % 6), true, 0);
      if (rng() % 2) input[9 + 8 + rng() % (len - 8)] = uint8_t(rng());
    }
    records += uint64_t(pd3fuzz::run_request_ring_input(host.control(), input.data(), input.size()));
  }
  CHECK(records > 0);
}
