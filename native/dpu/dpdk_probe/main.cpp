// pd3-dpdk-probe — runs the EAL initialisation and port setup of the DPDK capture backend in a
// process of its own, before the agent does them in-process (dpdk_mirror.cpp): rte_eal_init may
// exit or abort on some errors, and runs only once per process, so a refusal must cost this
// process, not the agent. Prints the EAL's log on stderr; exits 0 when the port came up, 2 with
// "pd3-dpdk-probe: REASON" as its last line otherwise.
//
//   pd3-dpdk-probe PORT MBUFS DATA_ROOM RX_DESC -- EAL_ARGS...
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dpu/dpdk_port.hpp"

namespace {

[[noreturn]] void refuse(const std::string& why) {
  std::fprintf(stderr, "pd3-dpdk-probe: %s\n", why.c_str());
  std::exit(2);
}

uint32_t number(const char* text, const char* what) {
  char* end = nullptr;
  const unsigned long v = std::strtoul(text, &end, 10);
  if (end == text || *end != '\0' || v > UINT32_MAX) refuse(std::string(what) + " '" + text + "' is not a number");
  return uint32_t(v);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6 || std::strcmp(argv[5], "--") != 0) refuse("usage: pd3-dpdk-probe PORT MBUFS DATA_ROOM RX_DESC -- EAL_ARGS...");
  pd3::RxPortSetup setup;
  setup.spec = argv[1];
  setup.mbufs = number(argv[2], "MBUFS");
  setup.data_room = number(argv[3], "DATA_ROOM");
  setup.rx_desc = uint16_t(number(argv[4], "RX_DESC"));
  setup.promiscuous = false;  // the agent decides; nothing to restore here
  const std::vector<std::string> eal_args(argv + 6, argv + argc);
  pd3::keep_eal_log(true);
  std::string error;
  if (!pd3::eal_init_once(eal_args, &error)) refuse(error);
  pd3::RxPort port;
  if (!port.open(setup, &error)) refuse(error);
  port.close();
  return 0;
}
