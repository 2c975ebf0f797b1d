// main.cpp — runs every registered native test case, or those whose name contains argv[1].
#include <cstring>

#include "harness.hpp"

int main(int argc, char** argv) {
  const char* filter = argc > 1 ? argv[1] : nullptr;
  int passed = 0, failed = 0;
  for (const auto& c : pd3test::registry()) {
    if (filter && std::strstr(c.name, filter) == nullptr) continue;
    pd3test::failures() = 0;
    try {
      c.fn();
    } catch (const pd3test::Abort&) {
    }
    const bool ok = pd3test::failures() == 0;
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", c.name);
    std::fflush(stdout);
    (ok ? passed : failed)++;
  }
  std::printf("native: %d passed, %d failed\n", passed, failed);
  return failed == 0 && passed > 0 ? 0 : 1;
}
