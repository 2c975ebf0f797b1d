// harness.hpp — a minimal native test harness: TEST(name) registers a case, CHECK/REQUIRE assert.
// Prints one line per case and a final "N passed, N failed" line; exits non-zero on any failure.
// Kept dependency-free so `npm test` needs nothing beyond the compiler.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace pd3test {

struct Case {
  const char* name;
  void (*fn)();
};

inline std::vector<Case>& registry() {
  static std::vector<Case> cases;
  return cases;
}

// Failures recorded by CHECK in the running case.
inline int& failures() {
  static int n = 0;
  return n;
}

struct Register {
  Register(const char* name, void (*fn)()) { registry().push_back({name, fn}); }
};

// Thrown by REQUIRE to abort the current case (tests only; never crosses a C ABI).
struct Abort {};

}  // namespace pd3test

#define PD3_CAT2(a, b) a##b
#define PD3_CAT(a, b) PD3_CAT2(a, b)
#define TEST(name)                                                        \
  static void PD3_CAT(test_, name)();                                     \
  static pd3test::Register PD3_CAT(reg_, name)(#name, &PD3_CAT(test_, name)); \
  static void PD3_CAT(test_, name)()

#define CHECK(cond)                                                                    \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
      ++pd3test::failures();                                                           \
    }                                                                                  \
  } while (0)

#define CHECK_EQ(a, b)                                                                              \
  do {                                                                                              \
    const auto va_ = (a);                                                                           \
    const auto vb_ = (b);                                                                           \
    if (!(va_ == vb_)) {                                                                            \
      std::fprintf(stderr, "  %s:%d: CHECK_EQ(%s, %s) failed: %lld vs %lld\n", __FILE__, __LINE__, \
                   #a, #b, (long long)va_, (long long)vb_);                                         \
      ++pd3test::failures();                                                                        \
    }                                                                                               \
  } while (0)

#define REQUIRE(cond)                                                                    \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "  %s:%d: REQUIRE(%s) failed\n", __FILE__, __LINE__, #cond); \
      ++pd3test::failures();                                                             \
      throw pd3test::Abort{};                                                            \
    }                                                                                    \
  } while (0)
