// dpdk_absent.cpp — the DPDK backend of a build without libdpdk (CMakeLists.txt compiles this file
// instead of dpdk_mirror.cpp): it says so. The parts of dpdk_mirror.hpp that need no DPDK are in
// dpdk_options.cpp, shared by both builds.
#include "common/error.hpp"
#include "dpu/dpdk_mirror.hpp"
#include "pd3/status.h"

namespace pd3 {

bool dpdk_mirror_built_in() { return false; }

int DpdkMirror::start(const DpdkMirrorOptions&, FlowCallbacks, std::unique_ptr<DpdkMirror>*) {
  clear_error();
  return fail(PD3_E_INVAL, "%s", kDpdkNotBuiltIn);
}

}  // namespace pd3
