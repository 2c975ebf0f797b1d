// dpdk_port.hpp — the DPDK calls the capture backend and its probe program share (DPDK builds
// only): the EAL's initialisation, once per process, with its log kept for error messages, and
// one port set up to receive on a single rx queue from a pool sized by the options.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct rte_mempool;

namespace pd3 {

// Sends the EAL's log lines to `stderr` (true) or keeps them for take_eal_log() (false). Before
// eal_init_once.
void keep_eal_log(bool to_stderr);
// The EAL log lines kept since the last call.
std::vector<std::string> take_eal_log();

// Initialises the EAL with `args` (argv[0] is supplied) unless this process did already: then
// `args` must be the same. The calling thread becomes the EAL's main lcore; its CPU affinity is
// restored afterwards, so the EAL's -l/--lcores do not move it. False with *error (the EAL's
// reason: rte_errno and its last log lines) on failure.
[[nodiscard]] bool eal_init_once(const std::vector<std::string>& args, std::string* error);

// True once eal_init_once succeeded in this process.
bool eal_ready();

// How a port is set up.
struct RxPortSetup {
  std::string spec;          // a port id, a port name, or a vdev to plug in ("net_af_packet0,iface=m1")
  uint32_t mbufs = 1023;
  uint32_t data_room = 2048;  // bytes of packet data per mbuf
  uint16_t rx_desc = 512;
  bool promiscuous = true;
};

// One port receiving on queue 0, and the pool its mbufs come from. Single-threaded.
class RxPort {
 public:
  RxPort() = default;
  ~RxPort() { close(); }
  RxPort(const RxPort&) = delete;
  RxPort& operator=(const RxPort&) = delete;

  // Finds (or plugs in) the port, creates the pool, configures one rx and one tx queue, starts the
  // port and enables promiscuous mode if asked (remembering the state before). False with *error.
  [[nodiscard]] bool open(const RxPortSetup& setup, std::string* error);
  // Stops and closes the port, restores its promiscuous state, removes a vdev open() plugged in
  // and frees the pool. Idempotent.
  void close();

  uint16_t id() const { return id_; }
  const std::string& name() const { return name_; }
  // The link state now: false also when the port is gone, or when it stands for a kernel interface
  // (af_packet: dev_info.if_index) that no longer exists — the driver's own link state misses that.
  bool link_up() const;

 private:
  bool opened_ = false;
  uint16_t id_ = 0;
  std::string name_;
  std::string plugged_;       // the vdev name open() plugged in ("" if the port existed)
  unsigned if_index_ = 0;     // the kernel interface behind the port, 0 for none
  int promisc_before_ = -1;   // rte_eth_promiscuous_get before open(); -1: not changed
  rte_mempool* pool_ = nullptr;
};

}  // namespace pd3
