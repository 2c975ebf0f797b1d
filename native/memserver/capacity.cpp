// capacity.cpp — see capacity.hpp.
#include "memserver/capacity.hpp"

#include <cstdio>
#include <cstring>

namespace pd3 {

uint64_t machine_available_bytes() {
  FILE* f = std::fopen("/proc/meminfo", "re");
  if (f == nullptr) return 0;
  char line[256];
  uint64_t kib = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    unsigned long long v = 0;
    if (std::sscanf(line, "MemAvailable: %llu kB", &v) == 1) {
      kib = v;
      break;
    }
  }
  std::fclose(f);
  return kib * 1024;
}

uint64_t default_capacity(double headroom) {
  if (!(headroom >= 0.0 && headroom < 1.0)) return 0;
  return uint64_t(double(machine_available_bytes()) * (1.0 - headroom));
}

}  // namespace pd3
