// cpu_affinity.cpp — sched_setaffinity for --cpu.
#include "cpu_affinity.hpp"

#include <errno.h>
#include <sched.h>

#include <cstring>

namespace pd3::loadgen {

bool pin_to_cpu(int cpu, std::string* error) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) {
    *error = "no such CPU";
    return false;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (::sched_setaffinity(0, sizeof set, &set) != 0) {
    *error = std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace pd3::loadgen
