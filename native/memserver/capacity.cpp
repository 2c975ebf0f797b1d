// capacity.cpp — see capacity.hpp.
#include "memserver/capacity.hpp"

#include <cstdio>
#include <cstring>

namespace pd3 {

bool read_meminfo(const char* path, uint64_t* total_bytes, uint64_t* available_bytes) {
  FILE* f = std::fopen(path, "re");
  if (f == nullptr) return false;
  char line[256];
  bool have_total = false, have_available = false;
  while (std::fgets(line, sizeof line, f) != nullptr && !(have_total && have_available)) {
    unsigned long long v = 0;
    if (std::sscanf(line, "MemTotal: %llu kB", &v) == 1) {
      *total_bytes = uint64_t(v) * 1024;
      have_total = true;
    } else if (std::sscanf(line, "MemAvailable: %llu kB", &v) == 1) {
      *available_bytes = uint64_t(v) * 1024;
      have_available = true;
    }
  }
  std::fclose(f);
  return have_total && have_available;
}

uint64_t machine_available_bytes() {
  uint64_t total = 0, available = 0;
  return read_meminfo("/proc/meminfo", &total, &available) ? available : 0;
}

uint64_t default_capacity(double headroom) {
  if (!(headroom >= 0.0 && headroom < 1.0)) return 0;
  return uint64_t(double(machine_available_bytes()) * (1.0 - headroom));
}

}  // namespace pd3
