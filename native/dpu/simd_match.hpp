// simd_match.hpp — compare one 8-slot bucket (8 × u64, 64 bytes) against a key in one SIMD pass.
// Paths: AVX2 and SSE4.1 on x86-64 (chosen at run time), NEON on AArch64 (at build time), scalar
// everywhere. Every path returns the same bit mask (tests check it).
#pragma once

#include <cstdint>

namespace pd3 {

// Which bucket-compare implementation to use.
enum class SimdPath { kBest, kScalar, kSse41, kAvx2, kNeon };

// Returns a mask with bit i set when bucket[i] == key (bucket: 8 u64, 64-byte aligned).
using MatchFn = uint32_t (*)(const uint64_t* bucket, uint64_t key);

// The fastest path this CPU supports.
SimdPath best_simd_path();
// True if `path` can run on this CPU (kBest always can).
bool simd_supported(SimdPath path);
// The implementation of a supported path (kBest resolves to best_simd_path()); nullptr otherwise.
MatchFn simd_match(SimdPath path);
// "avx2", "sse4.1", "neon", "scalar" ("best" for kBest).
const char* simd_path_name(SimdPath path);

}  // namespace pd3
