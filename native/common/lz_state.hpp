// lz_state.hpp — a Loading Zone descriptor's state word, (seq << 2) | state (lz_view.hpp has the design).
#pragma once

#include <cstdint>

#include "pd3/wire.h"

namespace pd3 {

inline constexpr uint64_t lz_state(uint64_t seq, uint32_t state) { return (seq << PD3_LZ_STATE_BITS) | state; }
inline constexpr uint64_t lz_seq_of(uint64_t word) { return word >> PD3_LZ_STATE_BITS; }
inline constexpr uint32_t lz_state_of(uint64_t word) { return uint32_t(word & PD3_LZ_STATE_MASK); }

}  // namespace pd3
