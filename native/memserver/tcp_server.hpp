// tcp_server.hpp — the memory server's TCP transport: one epoll event-loop thread that accepts
// clients, checks their hello and executes their REQUEST frames on the MemStore it owns, in order.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <vector>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "common/log_queue.hpp"
#include "memserver/connection.hpp"
#include "memserver/mem_store.hpp"
#include "pd3/transport.h"

namespace pd3 {

// How a TcpServer listens and what it allows each client.
struct TcpServerOptions {
  std::string host = "127.0.0.1";             // IPv4 address or name to listen on
  uint16_t port = 0;                          // 0: the kernel picks one (see TcpServer::port())
  std::string token;                          // every hello must carry exactly this token
  uint32_t max_frame = PD3_FRAME_MAX_DEFAULT; // largest REQUEST frame accepted, and the response
                                              // bytes one frame may claim (see Connection)
  uint32_t max_connections = 64;              // clients at once; more are accepted and closed
  uint64_t max_output_bytes = 64ull << 20;    // per connection: unsent responses before the
                                              // server stops reading from it (back-pressure)
  uint32_t hello_timeout_ms = 5000;           // a client silent this long after connecting is closed
  uint32_t pressure_check_ms = 1000;          // how often MemStore::relieve_pressure runs; 0: never
  uint32_t warm_ahead = 8;                    // records of a frame after the one running whose bytes
                                              // are already hinted into the cache (MemStore::warm);
                                              // 0: no hints; at most kMaxWarmAhead
};

// The largest TcpServerOptions::warm_ahead: more hints than a core has misses in flight only evict.
inline constexpr uint32_t kMaxWarmAhead = 256;

// Counters and gauges of one server (a consistent snapshot: every field as of the same instant).
struct TcpServerStats {
  uint64_t connections = 0;          // open now
  uint64_t connections_total = 0;    // accepted and admitted since start
  uint64_t refused_connections = 0;  // closed at once because max_connections were open
  uint64_t frames = 0;               // REQUEST frames executed
  uint64_t records = 0;              // request records executed (or answered PD3_E_TOO_BIG)
  uint64_t bytes_in = 0;             // bytes read from clients
  uint64_t bytes_out = 0;            // bytes written to clients
  uint64_t protocol_errors = 0;      // connections closed for a malformed frame or hello
  uint64_t auth_failures = 0;        // hellos refused for a wrong token
  uint64_t hello_timeouts = 0;       // connections closed for not saying hello in time
  uint64_t too_big_records = 0;      // records answered PD3_E_TOO_BIG (frame response budget)
  uint64_t sync_failures = 0;        // frames whose MemStore::sync failed (connection closed)
  uint64_t read_pauses = 0;          // times a connection hit max_output_bytes
  uint64_t frames_behind_sync = 0;   // frames run while an earlier one of their connection awaited its sync
  uint64_t free_bytes = 0;           // MemStore::free_bytes() as of the snapshot
  MemStoreStats store;               // the store's counters as of the last frame
};

// The server: start() binds, listens and runs the loop thread until stop() or destruction.
class TcpServer {
 public:
  // Validates options, binds (SO_REUSEADDR), listens and starts the loop thread, which from then
  // on owns `store`. Returns PD3_OK, PD3_E_INVAL (bad options, no store) or PD3_E_SYS (bind,
  // listen, epoll, thread); pd3_last_error says why.
  static int start(const TcpServerOptions& options, std::unique_ptr<MemStore> store, std::unique_ptr<TcpServer>* out);
  ~TcpServer();
  TcpServer(const TcpServer&) = delete;
  TcpServer& operator=(const TcpServer&) = delete;

  // The port bound (the kernel's choice when options.port was 0).
  uint16_t port() const { return port_; }
  // Stops the loop thread, closes every connection (responses not yet written are dropped) and
  // the listening socket, and releases the store. stats(), batch_histogram() and log() keep
  // answering with what happened up to the stop. Idempotent; safe from any thread but the loop's.
  void stop();
  // Thread-safe snapshots, refreshed by the loop after every pass over its ready sockets.
  TcpServerStats stats() const;
  BatchHistogram batch_histogram() const;
  // Regions and bytes per tenant, as of the last region allocated or freed. Thread-safe.
  std::vector<TenantUsage> tenants() const;
  // Every region's access count and move state, as of at most kHeatPublishNs ago. Thread-safe.
  std::vector<RegionHeat> region_heat() const;
  // Asks the loop to free every region of `tenant` (MemStore::reclaim_tenant) and returns at once;
  // the loop logs tenant.reclaimed with what it freed, and tenants() then shows the tenant gone.
  // Thread-safe.
  void reclaim_tenant(const std::string& tenant);
  // Structured events. info: server.listen, server.stop, conn.open, conn.close, conn.tenant,
  // tenant.reclaimed, store.gave_back; error: tenant.reclaim_failed, store.give_back_failed; warn: conn.refused
  // (bad hello, no hello in time, max_connections), conn.protocol_error,
  // store.record_parser_rejected (at most every 10 s); error: store.sync_failed,
  // accept.failed, conn.out_of_memory, conn.epoll_failed, server.loop_failed, tier.io_error, tier.mr_refused.
  LogQueue& log() { return log_; }

 private:
  TcpServer(const TcpServerOptions& options, std::unique_ptr<MemStore> store);
  int listen_and_spawn();
  void run();
  void accept_all();
  // Open connections by id (the epoll user data of their sockets).
  using ConnectionMap = std::unordered_map<uint64_t, std::unique_ptr<Connection>>;
  void dispatch(uint64_t id, uint32_t events);
  void settle(ConnectionMap::iterator it);
  void on_timers();
  int next_timeout_ms() const;
  void set_listening(bool on);
  void publish();
  void run_commands();
  void wake();  // makes the loop's epoll_wait return (stop, or a command queued)
  void check_pressure(uint64_t now);
  void report_record_parser_rejects();
  // The tier's I/O completed: reap it and retry the parked connections.
  void on_store_io();
  void resume_parked();
  void log_io_errors();

  TcpServerOptions options_;
  std::unique_ptr<MemStore> store_;
  LogQueue log_;
  UniqueFd listen_fd_, epoll_fd_, wake_fd_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::mutex stop_mu_;  // serialises stop() callers
  std::atomic<bool> stop_requested_{false};

  // Work handed to the loop by other threads (wake_fd_ announces it).
  std::mutex commands_mu_;
  std::vector<std::string> reclaims_;  // tenants to reclaim, guarded by commands_mu_

  // A connection's hello deadline; they are queued in accept order, hence in deadline order.
  struct HelloDeadline {
    uint64_t deadline_ns;
    uint64_t id;
  };

  // Loop-thread state.
  ConnectionMap conns_;
  std::deque<HelloDeadline> hello_deadlines_;
  uint64_t next_id_ = kFirstConnectionId;
  bool listening_ = true;         // false while accept() is left alone after running out of fds
  uint64_t accept_retry_ns_ = 0;  // when to try accept() again
  uint64_t store_runs_ = ~0ull;   // frames run (ok or not) when the store's counters were last read
  uint64_t tenants_controls_ = ~0ull;  // store controls + reclaimed regions when the tenants were last read
  uint64_t rejects_logged_ = 0;   // record parser rejects as of the last store.record_parser_rejected
  uint64_t rejects_log_ns_ = 0;   // when that was logged
  uint64_t pressure_check_ns_ = 0;  // when relieve_pressure runs next
  uint64_t heat_ns_ = 0;          // when the region heat was last published
  uint64_t heat_runs_ = ~0ull;    // frames run when it was
  // The heat is a list as long as the regions: published at most this often, not after every pass.
  static constexpr uint64_t kHeatPublishNs = 100'000'000;
  TcpServerStats live_;
  BatchHistogram live_histogram_{};
  ConnectionContext context_;

  // Published copies, read by stats() and batch_histogram().
  mutable std::mutex snapshot_mu_;
  TcpServerStats snapshot_;
  std::vector<TenantUsage> snapshot_tenants_;
  std::vector<RegionHeat> snapshot_heat_;
  BatchHistogram snapshot_histogram_{};

  // epoll user data of the two non-connection fds; connections get ids from kFirstConnectionId.
  static constexpr uint64_t kListenId = 0, kWakeId = 1, kStoreIoId = 2, kFirstConnectionId = 3;
};

}  // namespace pd3
