// stats.hpp — the server's counters: one set per worker thread (each written by its owner only),
// summed when printed. README.md "Counters" says what each means.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace pd3::hashmap {

#define PD3_HASHMAP_COUNTERS(X) \
  X(connections)                \
  X(protocol_errors)            \
  X(requests)                   \
  X(gets)                       \
  X(puts)                       \
  X(dels)                       \
  X(local_hits)                 \
  X(absent_local)               \
  X(misses)                     \
  X(zone_hits)                  \
  X(zone_waited_hits)           \
  X(remote_lookups)             \
  X(batched_lookups)            \
  X(remote_errors)              \
  X(inserts)                    \
  X(table_full)                 \
  X(evictions)                  \
  X(prefetches_issued)          \
  X(prefetches_admitted)        \
  X(reads)                      \
  X(writebacks)                 \
  X(write_errors)

// Counters of one thread. relaxed everywhere: each is a statistic with one writer; readers
// only need some recent value of each.
struct Stats {
#define PD3_HASHMAP_FIELD(name) std::atomic<uint64_t> name{0};
  PD3_HASHMAP_COUNTERS(PD3_HASHMAP_FIELD)
#undef PD3_HASHMAP_FIELD

  void add(std::atomic<uint64_t> Stats::*field, uint64_t n = 1) {
    (this->*field).fetch_add(n, std::memory_order_relaxed);  // relaxed: a statistic (see above)
  }
};

// A plain copy of summed counters.
struct StatsSnapshot {
#define PD3_HASHMAP_FIELD(name) uint64_t name = 0;
  PD3_HASHMAP_COUNTERS(PD3_HASHMAP_FIELD)
#undef PD3_HASHMAP_FIELD

  void accumulate(const Stats& s) {
#define PD3_HASHMAP_SUM(name) name += s.name.load(std::memory_order_relaxed);  // relaxed: a statistic
    PD3_HASHMAP_COUNTERS(PD3_HASHMAP_SUM)
#undef PD3_HASHMAP_SUM
  }

  // `"name":value,...` for a JSON object.
  std::string json_fields() const {
    std::string out;
#define PD3_HASHMAP_JSON(name) \
  out += (out.empty() ? "\"" : ",\""), out += #name, out += "\":", out += std::to_string(name);
    PD3_HASHMAP_COUNTERS(PD3_HASHMAP_JSON)
#undef PD3_HASHMAP_JSON
    return out;
  }
};

}  // namespace pd3::hashmap
