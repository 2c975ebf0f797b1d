// worker.hpp — one worker thread: an epoll loop over the connections it was given, running each
// received batch of requests against the table and writing the responses in request order. It
// owns its pd3_host handle (HostChannel) and its miss path, so remote completions are its own.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "connection.hpp"
#include "hash_table.hpp"
#include "request_reader.hpp"

namespace pd3::hashmap {

// A worker thread and the connections it serves.
class Worker {
 public:
  // `channel` and `miss` are null in the local mode; the worker owns them.
  Worker(uint32_t index, HashTable& table, std::unique_ptr<HostChannel> channel, Stats& stats);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // The context its miss path is built over (stable address), and the miss path itself.
  WorkerContext& context() { return context_; }
  HostChannel* channel() { return channel_.get(); }
  void set_miss_path(std::unique_ptr<MissPath> miss);

  // Creates the epoll set and starts the thread. PD3_OK or PD3_E_SYS.
  int start();
  // Hands over an accepted, non-blocking socket (any thread).
  void adopt(UniqueFd fd, std::string peer);
  // Stops the loop, closes its connections and joins.
  void stop();

 private:
  void loop();
  void take_new_connections();
  // Handles readiness of one connection; false once it must be closed.
  bool on_event(Connection& c, uint32_t events);
  // Parses and runs every complete request in the input; false if the input is malformed.
  bool process(Connection& c);
  void run_batch(Connection& c);
  void execute(const Request& r, std::vector<uint8_t>* out);
  // Re-arms epoll for what the connection needs now.
  void update_interest(Connection& c);
  void close_connection(int fd, const char* event, const std::string& why);

  uint32_t index_;
  HashTable& table_;
  std::unique_ptr<HostChannel> channel_;
  std::unique_ptr<MissPath> miss_;
  Stats& stats_;
  WorkerContext context_;
  UniqueFd epoll_;
  UniqueFd wake_;  // eventfd: new connections or stop
  std::atomic<bool> stopping_{false};
  std::mutex handover_mu_;
  std::vector<std::pair<UniqueFd, std::string>> handover_;
  std::unordered_map<int, std::unique_ptr<Connection>> connections_;
  std::vector<Request> requests_;  // scratch of one batch
  std::vector<Entry> entries_;
  std::vector<uint64_t> batch_keys_;
  std::thread thread_;
};

}  // namespace pd3::hashmap
