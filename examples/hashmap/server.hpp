// server.hpp — the hash map server's life: start (listen, create the segment, wait for the agent,
// allocate and load remote memory, start the workers), serve until a signal, stop. main.cpp is
// only its command line.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "hash_table.hpp"
#include "io_thread.hpp"
#include "listener.hpp"
#include "server_options.hpp"
#include "worker.hpp"

namespace pd3::hashmap {

// The running server.
class Server {
 public:
  explicit Server(ServerOptions options) : o_(std::move(options)) {}
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Everything up to serving. PD3_OK, or a failure already logged as "start.failed".
  int start();
  // Serves until SIGINT/SIGTERM; then stops the workers and prints the final stats line.
  void run();

 private:
  int fail(int rc, const std::string& why);
  // Creates the host segment (all remote modes; direct ones need it for their handles too).
  int create_segment();
  // Waits for the agent (pd3 modes), allocates the regions and bulk-loads them.
  int setup_remote();
  int start_workers();
  std::unique_ptr<MissPath> miss_path_for(Worker& w);
  // Deallocates the table's regions once (at exit, or after a failed start).
  void give_back_regions();
  void print_stats() const;

  ServerOptions o_;
  Listener listener_;
  pd3_host* owner_ = nullptr;  // the creating handle (closed last)
  std::optional<SlotLayout> layout_;
  bool regions_released_ = false;
  std::unique_ptr<HashTable> table_;
  std::vector<std::unique_ptr<Stats>> stats_;  // one per worker, then the I/O thread's
  std::unique_ptr<IoThread> io_;
  std::vector<std::unique_ptr<Worker>> workers_;
  size_t next_worker_ = 0;
};

}  // namespace pd3::hashmap
