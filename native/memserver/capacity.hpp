// capacity.hpp — how much memory a memory server offers when its config does not say (Dodo §3:
// what the machine can spare, minus a headroom).
#pragma once

#include <cstdint>

namespace pd3 {

// MemTotal and MemAvailable of a meminfo file (/proc/meminfo, or a stand-in a container or a
// test provides). Returns false if the file or either line cannot be read.
[[nodiscard]] bool read_meminfo(const char* path, uint64_t* total_bytes, uint64_t* available_bytes);

// Bytes available for new allocations on this machine right now (MemAvailable of /proc/meminfo),
// or 0 if it cannot be read.
uint64_t machine_available_bytes();

// The default capacity: available × (1 − headroom), with headroom in [0, 1). 0 if unknown.
uint64_t default_capacity(double headroom);

}  // namespace pd3
