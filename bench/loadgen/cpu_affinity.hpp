// cpu_affinity.hpp — pinning the load generator to one CPU (--cpu).
#pragma once

#include <string>

namespace pd3::loadgen {

// Pins the calling process to `cpu`. False with the system's reason in *error (the caller reports
// it and runs unpinned).
[[nodiscard]] bool pin_to_cpu(int cpu, std::string* error);

}  // namespace pd3::loadgen
