// packet_fuzzer.cpp — libFuzzer entry point for packet decoding and TCP reassembly (the mirror's
// input boundary). Build and run: docs/mirror.md ("Fuzzing").
#include "packet_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pd3fuzz::run_packet_input(data, size);
  return 0;
}
