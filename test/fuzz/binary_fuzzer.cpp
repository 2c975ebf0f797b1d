// binary_fuzzer.cpp — libFuzzer entry point for the built-in binary request parser (pd3/binproto.h;
// properties in parser_target.hpp). Build and run: docs/parsers.md ("Fuzzing").
#include "parser_target.hpp"
#include "parsers/binary_parser.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pd3fuzz::run_parser_input(pd3::binary_parser(), data, size);
  return 0;
}
