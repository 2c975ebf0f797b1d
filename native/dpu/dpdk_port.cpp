// dpdk_port.cpp — see dpdk_port.hpp. Every DPDK call's failure is turned into a message naming
// the call, the port and DPDK's reason; nothing here exits the process.
#include "dpu/dpdk_port.hpp"

#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <atomic>
#include <cctype>
#include <cstring>
#include <mutex>

namespace pd3 {
namespace {

constexpr size_t kLogKept = 64;  // EAL log lines kept for error messages
constexpr unsigned kPoolCache = 32;

// The EAL's state in this process: rte_eal_init may run once.
struct EalState {
  std::mutex mu;
  bool ready = false;
  std::vector<std::string> args;  // those it was initialised with
  // The log kept for messages, and the unfinished line.
  std::vector<std::string> lines;
  std::string partial;
};

EalState& eal() {
  static EalState s;
  return s;
}

// fopencookie's write: split into lines, keep the last kLogKept.
ssize_t log_write(void*, const char* buf, size_t size) {
  EalState& s = eal();
  std::lock_guard lock(s.mu);
  for (size_t i = 0; i < size; ++i) {
    if (buf[i] != '\n') {
      s.partial.push_back(buf[i]);
      continue;
    }
    if (s.lines.size() == kLogKept) s.lines.erase(s.lines.begin());
    s.lines.push_back(std::move(s.partial));
    s.partial.clear();
  }
  return ssize_t(size);
}

// The last `n` kept log lines, joined with "; " (the EAL's reason for a failure).
std::string last_lines(size_t n) {
  EalState& s = eal();
  std::lock_guard lock(s.mu);
  std::string out;
  const size_t from = s.lines.size() > n ? s.lines.size() - n : 0;
  for (size_t i = from; i < s.lines.size(); ++i) out += (out.empty() ? "" : "; ") + s.lines[i];
  return out;
}

std::string rte_reason(int err) { return std::string(rte_strerror(err < 0 ? -err : err)); }

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// "net_af_packet0 (0), net_ring0 (1)" or "none".
std::string known_ports() {
  std::string out;
  uint16_t id;
  RTE_ETH_FOREACH_DEV(id) {
    char name[RTE_ETH_NAME_MAX_LEN] = {};
    if (rte_eth_dev_get_name_by_port(id, name) != 0) continue;
    out += (out.empty() ? "" : ", ") + std::string(name) + " (" + std::to_string(id) + ")";
  }
  return out.empty() ? "none" : out;
}

}  // namespace

void keep_eal_log(bool to_stderr) {
  if (to_stderr) {
    (void)rte_openlog_stream(stderr);
    return;
  }
  static FILE* kept = [] {
    cookie_io_functions_t io{};
    io.write = log_write;
    FILE* f = fopencookie(nullptr, "w", io);
    if (f) setvbuf(f, nullptr, _IOLBF, 0);
    return f;
  }();
  if (kept) (void)rte_openlog_stream(kept);
}

std::vector<std::string> take_eal_log() {
  EalState& s = eal();
  std::lock_guard lock(s.mu);
  std::vector<std::string> out;
  out.swap(s.lines);
  return out;
}

bool eal_ready() {
  EalState& s = eal();
  std::lock_guard lock(s.mu);
  return s.ready;
}

bool eal_init_once(const std::vector<std::string>& args, std::string* error) {
  EalState& s = eal();
  {
    std::lock_guard lock(s.mu);
    if (s.ready) {
      if (args == s.args) return true;
      *error = "the EAL of this process was initialised with other arguments; DPDK allows it once per process";
      return false;
    }
  }
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  std::string arg0 = "pd3-agent";
  argv.push_back(arg0.data());
  for (std::string& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  cpu_set_t before;
  const bool have_affinity = pthread_getaffinity_np(pthread_self(), sizeof before, &before) == 0;
  const int rc = rte_eal_init(int(argv.size() - 1), argv.data());
  if (have_affinity) (void)pthread_setaffinity_np(pthread_self(), sizeof before, &before);
  if (rc < 0) {
    const std::string lines = last_lines(3);
    *error = "EAL initialisation failed (" + rte_reason(rte_errno) + ")" + (lines.empty() ? "" : ": " + lines);
    return false;
  }
  std::lock_guard lock(s.mu);
  s.ready = true;
  s.args = args;
  return true;
}

bool RxPort::open(const RxPortSetup& setup, std::string* error) {
  close();
  const std::string& spec = setup.spec;
  if (all_digits(spec)) {
    const unsigned long id = std::strtoul(spec.c_str(), nullptr, 10);
    if (id > UINT16_MAX || !rte_eth_dev_is_valid_port(uint16_t(id))) {
      *error = "no DPDK port " + spec + " (ports: " + known_ports() + ")";
      return false;
    }
    id_ = uint16_t(id);
  } else {
    const std::string name = spec.substr(0, spec.find(','));
    if (rte_eth_dev_get_port_by_name(name.c_str(), &id_) != 0) {
      if (spec.find(',') == std::string::npos) {
        *error = "no DPDK port named '" + name + "' (ports: " + known_ports() +
                 "); give --vdev in the EAL arguments, or a vdev with its arguments as the port";
        return false;
      }
      const int rc = rte_dev_probe(spec.c_str());
      if (rc != 0) {
        const std::string lines = last_lines(2);
        *error = "cannot plug in '" + spec + "' (" + rte_reason(rc) + ")" + (lines.empty() ? "" : ": " + lines);
        return false;
      }
      plugged_ = name;
      if (rte_eth_dev_get_port_by_name(name.c_str(), &id_) != 0) {
        *error = "'" + spec + "' was plugged in but is no ethdev port";
        (void)rte_eal_hotplug_remove("vdev", plugged_.c_str());
        plugged_.clear();
        return false;
      }
    }
  }
  char name[RTE_ETH_NAME_MAX_LEN] = {};
  (void)rte_eth_dev_get_name_by_port(id_, name);
  name_ = name;
  opened_ = true;  // from here close() undoes what was done

  const std::string where = "port " + name_;
  rte_eth_dev_info info{};
  if (const int rc = rte_eth_dev_info_get(id_, &info); rc != 0) {
    *error = where + ": rte_eth_dev_info_get: " + rte_reason(rc);
    return false;
  }
  if_index_ = info.if_index;
  static std::atomic<unsigned> pools{0};
  // relaxed: only makes pool names unique.
  const std::string pool_name = "pd3rx" + std::to_string(pools.fetch_add(1, std::memory_order_relaxed));
  const int socket = rte_eth_dev_socket_id(id_);
  pool_ = rte_pktmbuf_pool_create(pool_name.c_str(), setup.mbufs, kPoolCache, 0,
                                  uint16_t(setup.data_room + RTE_PKTMBUF_HEADROOM), socket < 0 ? SOCKET_ID_ANY : socket);
  if (pool_ == nullptr) {
    *error = where + ": cannot create a pool of " + std::to_string(setup.mbufs) + " mbufs of " +
             std::to_string(setup.data_room) + " bytes (" + rte_reason(rte_errno) +
             "); lower --dpdk-mbufs or give the EAL more memory (-m)";
    return false;
  }
  rte_eth_conf conf{};
  if (const int rc = rte_eth_dev_configure(id_, 1, 1, &conf); rc != 0) {
    *error = where + ": rte_eth_dev_configure: " + rte_reason(rc);
    return false;
  }
  uint16_t rxd = setup.rx_desc, txd = 64;
  (void)rte_eth_dev_adjust_nb_rx_tx_desc(id_, &rxd, &txd);
  if (const int rc = rte_eth_rx_queue_setup(id_, 0, rxd, socket < 0 ? SOCKET_ID_ANY : unsigned(socket), nullptr, pool_);
      rc != 0) {
    const std::string lines = last_lines(1);
    *error = where + ": rx queue setup with " + std::to_string(setup.data_room) + "-byte mbufs failed (" +
             rte_reason(rc) + ")" + (lines.empty() ? "" : ": " + lines) +
             "; the mbufs must hold the port's largest frame (--dpdk-mbuf-bytes, af_packet's framesz)";
    return false;
  }
  if (const int rc = rte_eth_tx_queue_setup(id_, 0, txd, socket < 0 ? SOCKET_ID_ANY : unsigned(socket), nullptr);
      rc != 0) {
    *error = where + ": tx queue setup: " + rte_reason(rc);
    return false;
  }
  if (const int rc = rte_eth_dev_start(id_); rc != 0) {
    *error = where + ": rte_eth_dev_start: " + rte_reason(rc);
    return false;
  }
  if (setup.promiscuous) {
    const int was = rte_eth_promiscuous_get(id_);
    if (was == 0) {
      if (const int rc = rte_eth_promiscuous_enable(id_); rc != 0) {
        *error = where + ": cannot enable promiscuous mode: " + rte_reason(rc);
        return false;
      }
      promisc_before_ = 0;
    }
  }
  return true;
}

void RxPort::close() {
  if (!opened_) return;
  opened_ = false;
  if (promisc_before_ == 0) (void)rte_eth_promiscuous_disable(id_);
  promisc_before_ = -1;
  (void)rte_eth_dev_stop(id_);
  (void)rte_eth_dev_close(id_);
  if (!plugged_.empty()) (void)rte_eal_hotplug_remove("vdev", plugged_.c_str());
  plugged_.clear();
  if (pool_) rte_mempool_free(pool_);
  pool_ = nullptr;
}

bool RxPort::link_up() const {
  if (!opened_ || !rte_eth_dev_is_valid_port(id_)) return false;
  char kernel_name[IF_NAMESIZE];
  if (if_index_ != 0 && if_indextoname(if_index_, kernel_name) == nullptr) return false;
  rte_eth_link link{};
  if (rte_eth_link_get_nowait(id_, &link) != 0) return false;
  return link.link_status == RTE_ETH_LINK_UP;
}

}  // namespace pd3
