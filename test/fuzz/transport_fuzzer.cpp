// transport_fuzzer.cpp — libFuzzer entry point for the transport decoders (frames, records, hello).
// Build and run: docs/testing.md ("Fuzzing with libFuzzer").
#include "transport_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pd3fuzz::run_transport_input(data, size);
  return 0;
}
