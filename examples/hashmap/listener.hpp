// listener.hpp — the server's TCP listening socket and the thread that accepts clients, reads
// stdin commands and waits for SIGINT/SIGTERM (the main thread, after start-up).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "connection.hpp"

namespace pd3::hashmap {

// A bound, listening, non-blocking TCP socket.
class Listener {
 public:
  // Binds host:port (IPv4 address or name; port 0 picks one). PD3_OK or PD3_E_SYS / PD3_E_INVAL
  // with the reason in *why.
  int open(const std::string& host, uint16_t port, std::string* why);
  int fd() const { return fd_.get(); }
  uint16_t port() const { return port_; }

 private:
  UniqueFd fd_;
  uint16_t port_ = 0;
};

// What the control loop calls.
struct ControlHandlers {
  std::function<void(UniqueFd fd, std::string peer)> accepted;
  std::function<void()> stats;  // a "stats" line on stdin
};

// Blocks SIGINT and SIGTERM in the calling thread and every thread it creates afterwards (they
// are taken with a signalfd by run_control_loop). Call before starting any thread.
void block_stop_signals();

// Accepts clients, answers stdin commands, and returns the signal number once SIGINT or SIGTERM
// arrives.
int run_control_loop(const Listener& listener, const ControlHandlers& handlers);

}  // namespace pd3::hashmap
