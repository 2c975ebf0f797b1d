// ycsb.hpp — seeded YCSB core workloads A–F for native clients, bit-for-bit the same op sequence,
// keys and values as workloads/ycsb.ts (docs/workloads.md). Header-only; create() reports bad
// options through workloads::fail, read back with pd3::workloads::last_error() (no library needed).
//
// Every decision uses uint64 arithmetic and IEEE +, −, ×, ÷, floor and this file's own ln/exp, in
// the same order as ycsb.ts, so results do not depend on the C library's pow. That also needs no
// fused multiply-add contraction and no x87 excess precision: checked below. Keep any change
// mirrored in ycsb.ts; the hard digests in test/native/ycsb_test.cpp and test/ycsb.test.ts catch a
// side that drifts.
#pragma once

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "pd3/status.h"
#include "workload_error.hpp"

#if FLT_EVAL_METHOD != 0
#error "ycsb.hpp needs double arithmetic without excess precision (SSE2 / AArch64), or it diverges from ycsb.ts"
#endif
// GNU C++ modes let GCC fuse a*b+c into one FMA when the target has it, which changes results.
// ISO modes (-std=c++20, this project's) do not; with -std=gnu++20 add -ffp-contract=off and
// define PD3_YCSB_FP_CONTRACT_OFF.
#if defined(__GNUC__) && !defined(__clang__) && !defined(__STRICT_ANSI__) && defined(__FP_FAST_FMA) && \
    !defined(PD3_YCSB_FP_CONTRACT_OFF)
#error "ycsb.hpp: build with -std=c++20 (not gnu++20) or -ffp-contract=off + -DPD3_YCSB_FP_CONTRACT_OFF"
#endif
// Clang contracts within an expression by default; switched off inside every floating-point body.
#if defined(__clang__)
#define PD3_YCSB_NO_FP_CONTRACT _Pragma("clang fp contract(off)")
#else
#define PD3_YCSB_NO_FP_CONTRACT
#endif

namespace pd3::ycsb {

// An operation a client performs; kReadModifyWrite reads the record, then writes it back.
enum class OpType : uint8_t { kRead = 0, kUpdate = 1, kInsert = 2, kScan = 3, kReadModifyWrite = 4 };

// How the key of a READ / UPDATE / SCAN / RMW is chosen; kDefault = the workload's YCSB default.
enum class Distribution : uint8_t { kDefault, kUniform, kZipfian, kLatest };

inline constexpr uint64_t kMaxRecords = uint64_t(1) << 37;  // as MAX_RECORDS in ycsb.ts
inline constexpr uint64_t kMaxOperations = uint64_t(1) << 45;  // keeps ops × 100 exact in a double
inline constexpr uint32_t kMaxValueSize = 1u << 20;
inline constexpr uint32_t kMaxKeyWidth = 20;
inline constexpr uint64_t kUnbounded = UINT64_MAX;  // operation_count: no end

// What Workload::create accepts (the fields of WorkloadOptions in ycsb.ts).
struct Options {
  char workload = 'A';                                 // 'A' .. 'F'
  Distribution distribution = Distribution::kDefault;  // kLatest for D, kZipfian otherwise
  uint64_t record_count = 0;                           // records 0 .. record_count − 1 are loaded
  uint64_t operation_count = kUnbounded;
  uint64_t seed = 0;
  uint32_t key_width = 12;  // decimal digits after the prefix in key_of
  std::string key_prefix = "user";
  uint32_t value_size = 100;
  double theta = 0.99;  // zipfian constant, 0 < θ < 1
};

// One generated operation (YcsbOp in ycsb.ts; absent fields there are 0 here).
struct Op {
  uint64_t seq = 0;  // 0-based position in the run
  OpType type = OpType::kRead;
  uint64_t key = 0;          // record number
  uint32_t scan_length = 0;  // kScan: records from key on, 1..100
  uint64_t version = 0;      // kUpdate / kInsert / kReadModifyWrite: seq + 1 (the load wrote 0)
};

namespace detail {

// splitmix64's finaliser: a bijection on 64-bit words.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

inline constexpr double kLn2Hi = 6.93147180369123816490e-1;  // 32 significant bits: k·kLn2Hi is exact
inline constexpr double kLn2Lo = 1.90821492927058770002e-10;
inline constexpr double kInvLn2 = 1.44269504088896338700;
inline constexpr double kSqrt2 = 1.4142135623730951;
inline constexpr double kSqrt1_2 = 0.7071067811865476;
inline constexpr double kTwo32 = 4294967296.0;
inline constexpr double kTwoM32 = 2.3283064365386963e-10;
// Series coefficients 1/(2i + 1) (atanh) and 1/j (Taylor), correctly rounded as LN_COEF / EXP_COEF.
inline constexpr int kLnTerms = 12;
inline constexpr int kExpTerms = 16;
inline constexpr auto kLnCoef = [] {
  std::array<double, kLnTerms> c{};
  for (int i = 0; i < kLnTerms; i++) c[i] = 1.0 / (2 * i + 1);
  return c;
}();
inline constexpr auto kExpCoef = [] {
  std::array<double, kExpTerms + 1> c{};
  for (int j = 1; j <= kExpTerms; j++) c[j] = 1.0 / j;
  return c;
}();

// Natural log of a finite x > 0 (detLn in ycsb.ts, operation for operation).
inline double det_ln(double x) {
  PD3_YCSB_NO_FP_CONTRACT
  int k = 0;
  while (x >= kTwo32) {
    x *= kTwoM32;
    k += 32;
  }
  while (x < kTwoM32) {
    x *= kTwo32;
    k -= 32;
  }
  while (x >= kSqrt2) {
    x *= 0.5;
    k += 1;
  }
  while (x < kSqrt1_2) {
    x *= 2;
    k -= 1;
  }
  const double s = (x - 1) / (x + 1);
  const double s2 = s * s;
  double series = kLnCoef[kLnTerms - 1];
  for (int i = kLnTerms - 2; i >= 0; i--) series = kLnCoef[i] + s2 * series;
  const double kd = k;
  return kd * kLn2Hi + (kd * kLn2Lo + 2 * s * series);
}

// e^x (detExp in ycsb.ts).
inline double det_exp(double x) {
  PD3_YCSB_NO_FP_CONTRACT
  if (x > 709.78) return INFINITY;
  if (x < -745.2) return 0;
  const double kd = std::floor(x * kInvLn2 + 0.5);
  const double r = x - kd * kLn2Hi - kd * kLn2Lo;
  double p = 1;
  for (int j = kExpTerms; j >= 1; j--) p = 1 + r * kExpCoef[j] * p;
  int k = int(kd);
  while (k > 30) {
    p *= 1073741824.0;
    k -= 30;
  }
  while (k < -30) {
    p *= 9.313225746154785e-10;
    k += 30;
  }
  return k >= 0 ? p * double(1 << k) : p / double(1 << -k);
}

// x^y for x >= 0 (0^y = 0).
inline double det_pow(double x, double y) {
  PD3_YCSB_NO_FP_CONTRACT
  return x == 0 ? 0 : det_exp(y * det_ln(x));
}

inline constexpr int kZetaHead = 1024;

// Σ_{i=m+1..n} i^-θ by Euler–Maclaurin (zetaTail in ycsb.ts).
inline double zeta_tail(double m, double n, double theta) {
  PD3_YCSB_NO_FP_CONTRACT
  const double g = 1 - theta;
  const double c1 = -theta;
  const double c3 = -theta * (theta + 1) * (theta + 2);
  const double c5 = -theta * (theta + 1) * (theta + 2) * (theta + 3) * (theta + 4);
  const double fm = det_pow(m, -theta);
  const double fn = det_pow(n, -theta);
  const double integral = (det_pow(n, g) - det_pow(m, g)) / g;
  const double d1 = c1 * det_pow(n, -theta - 1) - c1 * det_pow(m, -theta - 1);
  const double d3 = c3 * det_pow(n, -theta - 3) - c3 * det_pow(m, -theta - 3);
  const double d5 = c5 * det_pow(n, -theta - 5) - c5 * det_pow(m, -theta - 5);
  const double from_m = integral + (fm + fn) / 2 + d1 / 12 - d3 / 720 + d5 / 30240;
  return from_m - fm;
}

// FNV-1a 64 of the 8 little-endian bytes of rank, mod space.
inline uint64_t fnv_mod(uint64_t rank, uint64_t space) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (int i = 0; i < 8; i++) {
    h ^= (rank >> (8 * i)) & 0xFF;
    h *= 0x100000001B3ull;
  }
  return h % space;
}

}  // namespace detail

// xoshiro256** seeded with splitmix64: the one random stream a workload draws from (Xoshiro256).
class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t seed) {
    for (uint64_t& word : s_) {
      seed += 0x9E3779B97F4A7C15ull;
      word = detail::mix64(seed);
    }
  }

  uint64_t next_u64() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1): the top 53 bits times 2^-53 (exact).
  double next_double() { return double(next_u64() >> 11) * 1.1102230246251565e-16; }

  // Uniform in [0, n), 1 <= n <= 2^53: floor(u·n), clamped (u·n can round up to n).
  uint64_t next_below(uint64_t n) {
    PD3_YCSB_NO_FP_CONTRACT
    const double v = std::floor(next_double() * double(n));
    return v < double(n) ? uint64_t(v) : n - 1;
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// Zipfian ranks in [0, n) for a caller-given n that may grow between draws; rank 0 is hottest
// (Gray et al., as YCSB's ZipfianGenerator; Zipfian in ycsb.ts).
class Zipfian {
 public:
  explicit Zipfian(double theta) : theta_(theta), alpha_(1 / (1 - theta)) {
    head_.resize(detail::kZetaHead + 1);
    head_[0] = 0;
    for (int i = 1; i <= detail::kZetaHead; i++) head_[i] = head_[i - 1] + detail::det_pow(i, -theta);
  }

  double zeta(uint64_t n) const {
    if (n <= uint64_t(detail::kZetaHead)) return head_[n];
    return head_[detail::kZetaHead] + detail::zeta_tail(detail::kZetaHead, double(n), theta_);
  }

  uint64_t rank(double u, uint64_t n) {
    PD3_YCSB_NO_FP_CONTRACT
    if (n != n_) {
      zetan_ = zeta(n);
      eta_ = (1 - detail::det_pow(2 / double(n), 1 - theta_)) / (1 - head_[2] / zetan_);
      n_ = n;
    }
    const double uz = u * zetan_;
    if (uz < 1) return 0;
    if (n <= 2) return n - 1;
    if (uz < head_[2]) return 1;
    const double v = eta_ * u - eta_ + 1;
    const double r = std::floor(double(n) * detail::det_pow(v > 0 ? v : 0, alpha_));
    return r < double(n) ? uint64_t(r) : n - 1;
  }

 private:
  double theta_;
  double alpha_;
  std::vector<double> head_;  // prefix sums Σ_{i=1..k} i^-θ, k = 0..kZetaHead
  uint64_t n_ = UINT64_MAX;
  double zetan_ = 0;
  double eta_ = 0;
};

// zeta(n, θ) = Σ_{i=1..n} i^-θ; θ must be in (0, 1).
inline double zeta(uint64_t n, double theta) { return Zipfian(theta).zeta(n); }

// prefix + n zero-padded to width digits; PD3_E_RANGE if n has more digits.
inline int format_key(uint64_t n, uint32_t width, const std::string& prefix, std::string* out) {
  const std::string digits = std::to_string(n);
  if (digits.size() > width) return workloads::fail(PD3_E_RANGE, "key %llu does not fit in %u digits", (unsigned long long)n, width);
  out->assign(prefix);
  out->append(width - digits.size(), '0');
  out->append(digits);
  return PD3_OK;
}

// The 8-byte binary key of record n: n as a little-endian u64.
inline void binary_key(uint64_t n, uint8_t out[8]) {
  for (int i = 0; i < 8; i++) out[i] = uint8_t(n >> (8 * i));
}

// size printable bytes: record n's value at `version` (valueBytes in ycsb.ts).
inline void value_bytes(uint64_t n, uint64_t version, uint8_t* out, size_t size) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  uint64_t state = detail::mix64(n) ^ detail::mix64(version ^ 0x5851F42D4C957F2Dull);
  for (size_t i = 0; i < size;) {
    state += 0x9E3779B97F4A7C15ull;
    uint64_t w = detail::mix64(state);
    for (int b = 0; b < 8 && i < size; b++, i++) {
      out[i] = uint8_t(kAlphabet[w & 63]);
      w >>= 8;
    }
  }
}

// A seeded YCSB run (Workload in ycsb.ts): next() for each op; key_of/value_of give the bytes.
class Workload {
 public:
  // PD3_E_INVAL with the reason in pd3_last_error() for bad options.
  static int create(const Options& options, std::unique_ptr<Workload>* out) {
    Options o = options;
    const int mix_index = o.workload - 'A';
    if (mix_index < 0 || mix_index > 5) {
      return workloads::fail(PD3_E_INVAL, "unknown workload '%c' (expected one of A, B, C, D, E, F)", o.workload);
    }
    if (o.distribution == Distribution::kDefault) {
      o.distribution = o.workload == 'D' ? Distribution::kLatest : Distribution::kZipfian;
    }
    if (o.distribution != Distribution::kUniform && o.distribution != Distribution::kZipfian &&
        o.distribution != Distribution::kLatest) {
      return workloads::fail(PD3_E_INVAL, "unknown distribution %d", int(o.distribution));
    }
    if (o.record_count < 1 || o.record_count > kMaxRecords) {
      return workloads::fail(PD3_E_INVAL, "record_count must be 1 .. 2^37, got %llu", (unsigned long long)o.record_count);
    }
    if (o.operation_count != kUnbounded && o.operation_count > kMaxOperations) {
      return workloads::fail(PD3_E_INVAL, "operation_count must be 0 .. 2^45 or kUnbounded, got %llu",
                       (unsigned long long)o.operation_count);
    }
    if (o.key_width < 1 || o.key_width > kMaxKeyWidth) {
      return workloads::fail(PD3_E_INVAL, "key_width must be 1 .. %u, got %u", kMaxKeyWidth, o.key_width);
    }
    if (o.value_size < 1 || o.value_size > kMaxValueSize) {
      return workloads::fail(PD3_E_INVAL, "value_size must be 1 .. %u, got %u", kMaxValueSize, o.value_size);
    }
    if (!(o.theta > 0 && o.theta < 1)) {
      return workloads::fail(PD3_E_INVAL, "theta must be 0 < theta < 1 (Gray's zipfian needs θ ≠ 1), got %g", o.theta);
    }
    const uint64_t insert_per_mille = kMix[mix_index][2];
    const bool bounded = o.operation_count != kUnbounded;
    const uint64_t expected_inserts =
        insert_per_mille == 0 ? 0 : !bounded ? o.record_count : o.operation_count * insert_per_mille * 2 / 1000;
    const uint64_t space = std::min(o.record_count + expected_inserts, kMaxRecords);
    const uint64_t last_key = o.record_count - 1 + (insert_per_mille != 0 && bounded ? o.operation_count : 0);
    if (std::to_string(last_key).size() > o.key_width) {
      return workloads::fail(PD3_E_INVAL, "key_width %u is too small: record %llu needs %zu digits", o.key_width,
                       (unsigned long long)last_key, std::to_string(last_key).size());
    }
    out->reset(new Workload(o, mix_index, space));
    return PD3_OK;
  }

  // Writes the next op; false once operation_count ops were generated.
  bool next(Op* op) {
    if (options_.operation_count != kUnbounded && seq_ >= options_.operation_count) return false;
    op->seq = seq_++;
    const uint64_t draw = rng_.next_below(1000);
    int which = 0;
    while (draw >= cumulative_[which]) which++;
    op->type = OpType(which);
    op->scan_length = 0;
    op->version = 0;
    if (op->type == OpType::kInsert) {
      op->key = inserted_++;
      op->version = op->seq + 1;
      return true;
    }
    op->key = choose_key();
    if (op->type == OpType::kScan) op->scan_length = uint32_t(1 + rng_.next_below(kMaxScanLength));
    if (op->type != OpType::kRead && op->type != OpType::kScan) op->version = op->seq + 1;
    return true;
  }

  // The string key of record n (fixed width); PD3_E_RANGE if n needs more digits.
  int key_of(uint64_t n, std::string* out) const { return format_key(n, options_.key_width, options_.key_prefix, out); }
  static void binary_key_of(uint64_t n, uint8_t out[8]) { binary_key(n, out); }
  // value_size() bytes: record n's value at `version` (0 = as loaded).
  void value_of(uint64_t n, uint64_t version, uint8_t* out) const { value_bytes(n, version, out, options_.value_size); }

  const Options& options() const { return options_; }  // with the distribution resolved
  uint64_t record_count() const { return options_.record_count; }  // load: records 0 .. this − 1
  uint32_t value_size() const { return options_.value_size; }
  uint64_t inserted_count() const { return inserted_; }  // records existing after the ops so far
  uint64_t generated() const { return seq_; }
  uint64_t zipfian_space() const { return space_; }

 private:
  // Op mix in parts per 1000, in draw order READ, UPDATE, INSERT, SCAN, RMW.
  static constexpr uint16_t kMix[6][5] = {
      {500, 500, 0, 0, 0}, {950, 50, 0, 0, 0}, {1000, 0, 0, 0, 0},
      {950, 0, 50, 0, 0},  {0, 0, 50, 950, 0}, {500, 0, 0, 0, 500},
  };
  static constexpr uint64_t kMaxScanLength = 100;
  static constexpr int kMaxRedraws = 64;  // then the draw mod the inserted count (MAX_REDRAWS)

  Workload(const Options& o, int mix_index, uint64_t space)
      : options_(o), rng_(o.seed), zipf_(o.theta), space_(space), inserted_(o.record_count) {
    uint64_t sum = 0;
    for (int i = 0; i < 5; i++) cumulative_[i] = sum += kMix[mix_index][i];
  }

  uint64_t choose_key() {
    const uint64_t n = inserted_;
    if (options_.distribution == Distribution::kUniform) return rng_.next_below(n);
    if (options_.distribution == Distribution::kLatest) return n - 1 - zipf_.rank(rng_.next_double(), n);
    uint64_t key = 0;
    for (int i = 0; i < kMaxRedraws; i++) {
      key = detail::fnv_mod(zipf_.rank(rng_.next_double(), space_), space_);
      if (key < n) return key;
    }
    return key % n;
  }

  Options options_;
  Xoshiro256 rng_;
  Zipfian zipf_;
  uint64_t space_;
  uint64_t cumulative_[5] = {};
  uint64_t inserted_;
  uint64_t seq_ = 0;
};

}  // namespace pd3::ycsb

#undef PD3_YCSB_NO_FP_CONTRACT
