// request_ring_fuzzer.cpp — libFuzzer entry point for the agent's request-ring record decoder.
// Build and run: docs/testing.md ("Fuzzing with libFuzzer").
#include <memory>
#include <string>

#include <unistd.h>

#include "common/segment.hpp"
#include "request_ring_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static std::unique_ptr<pd3::Segment> segment = [] {
    std::unique_ptr<pd3::Segment> s;
    const std::string name = "pd3-fuzz-ring-" + std::to_string(getpid());
    if (pd3::Segment::create(name.c_str(), pd3_segment_sizes{4096, 4096, 0, 0, 0}, true, &s) != PD3_OK) std::abort();
    s->unlink_name();
    return s;
  }();
  pd3fuzz::run_request_ring_input(segment->control(), data, size);
  return 0;
}
