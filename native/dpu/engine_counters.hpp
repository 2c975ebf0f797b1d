// engine_counters.hpp — the Transfer Engine's counters and gauges (every PD3_ENGINE_COUNTER_FIELDS
// field of EngineStats), and the two ways they are written. Shared by the engine's pieces
// (engine.hpp, hint_issuer.hpp); internal to native/dpu.
#pragma once

#include <atomic>
#include <cstdint>

#include "dpu/transfer_engine.hpp"

namespace pd3 {

// The engine's counters. One writer (the engine thread) and any number of readers (stats()):
// every access is relaxed because each counter is an independent statistic that publishes no
// other memory, and a reader only needs some recent value of each.
struct EngineCounters {
#define PD3_COUNTER_FIELD(name) std::atomic<uint64_t> name{0};
  PD3_ENGINE_COUNTER_FIELDS(PD3_COUNTER_FIELD)
#undef PD3_COUNTER_FIELD
};

// Single writer: a relaxed load and store instead of a locked read-modify-write (see EngineCounters).
inline void bump(std::atomic<uint64_t>& counter, uint64_t n = 1) {
  counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}
// relaxed: see EngineCounters.
inline void set(std::atomic<uint64_t>& gauge, uint64_t v) { gauge.store(v, std::memory_order_relaxed); }

}  // namespace pd3
