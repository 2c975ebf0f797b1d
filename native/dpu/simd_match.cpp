// simd_match.cpp — bucket compare per SIMD path, and run-time selection.
#include "dpu/simd_match.hpp"

#include <initializer_list>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace pd3 {

namespace {

uint32_t match_scalar(const uint64_t* b, uint64_t key) {
  uint32_t mask = 0;
  for (uint32_t i = 0; i < 8; ++i) mask |= uint32_t(b[i] == key) << i;
  return mask;
}

#if defined(__x86_64__)
[[gnu::target("avx2")]] uint32_t match_avx2(const uint64_t* b, uint64_t key) {
  const __m256i k = _mm256_set1_epi64x(int64_t(key));
  const __m256i lo = _mm256_cmpeq_epi64(_mm256_load_si256(reinterpret_cast<const __m256i*>(b)), k);
  const __m256i hi = _mm256_cmpeq_epi64(_mm256_load_si256(reinterpret_cast<const __m256i*>(b + 4)), k);
  return uint32_t(_mm256_movemask_pd(_mm256_castsi256_pd(lo))) |
         uint32_t(_mm256_movemask_pd(_mm256_castsi256_pd(hi))) << 4;
}

[[gnu::target("sse4.1")]] uint32_t match_sse41(const uint64_t* b, uint64_t key) {
  const __m128i k = _mm_set1_epi64x(int64_t(key));
  uint32_t mask = 0;
  for (uint32_t i = 0; i < 4; ++i) {
    const __m128i eq = _mm_cmpeq_epi64(_mm_load_si128(reinterpret_cast<const __m128i*>(b + 2 * i)), k);
    mask |= uint32_t(_mm_movemask_pd(_mm_castsi128_pd(eq))) << (2 * i);
  }
  return mask;
}
#endif

#if defined(__aarch64__)
uint32_t match_neon(const uint64_t* b, uint64_t key) {
  const uint64x2_t k = vdupq_n_u64(key);
  uint32_t mask = 0;
  for (uint32_t i = 0; i < 4; ++i) {
    const uint64x2_t eq = vceqq_u64(vld1q_u64(b + 2 * i), k);
    mask |= uint32_t(vgetq_lane_u64(eq, 0) & 1) << (2 * i) | uint32_t(vgetq_lane_u64(eq, 1) & 1) << (2 * i + 1);
  }
  return mask;
}
#endif

}  // namespace

bool simd_supported(SimdPath path) {
  switch (path) {
    case SimdPath::kBest:
    case SimdPath::kScalar:
      return true;
#if defined(__x86_64__)
    case SimdPath::kAvx2:
      return __builtin_cpu_supports("avx2");
    case SimdPath::kSse41:
      return __builtin_cpu_supports("sse4.1");
#endif
#if defined(__aarch64__)
    case SimdPath::kNeon:
      return true;
#endif
    default:
      return false;
  }
}

SimdPath best_simd_path() {
  for (SimdPath p : {SimdPath::kAvx2, SimdPath::kNeon, SimdPath::kSse41})
    if (simd_supported(p)) return p;
  return SimdPath::kScalar;
}

MatchFn simd_match(SimdPath path) {
  if (path == SimdPath::kBest) path = best_simd_path();
  if (!simd_supported(path)) return nullptr;
  switch (path) {
#if defined(__x86_64__)
    case SimdPath::kAvx2:
      return match_avx2;
    case SimdPath::kSse41:
      return match_sse41;
#endif
#if defined(__aarch64__)
    case SimdPath::kNeon:
      return match_neon;
#endif
    default:
      return match_scalar;
  }
}

const char* simd_path_name(SimdPath path) {
  switch (path) {
    case SimdPath::kBest: return "best";
    case SimdPath::kScalar: return "scalar";
    case SimdPath::kSse41: return "sse4.1";
    case SimdPath::kAvx2: return "avx2";
    case SimdPath::kNeon: return "neon";
  }
  return "unknown";
}

}  // namespace pd3
