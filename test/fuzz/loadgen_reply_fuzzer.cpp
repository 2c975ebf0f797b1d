// loadgen_reply_fuzzer.cpp — libFuzzer entry point for pd3-loadgen's RESP reply parser
// (properties in loadgen_reply_target.hpp). Built with the other targets (docs/testing.md).
#include "loadgen_reply_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pd3fuzz::run_reply_input(data, size);
  return 0;
}
