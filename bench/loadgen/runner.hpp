// runner.hpp — the load generator's single-threaded event loop: connections on one epoll
// instance, requests issued closed loop (each connection keeps --pipeline outstanding) or open loop
// (--rate: operation i is due at start + i / rate, and its latency counts from then, so a server
// that falls behind shows in the latency instead of slowing the schedule: no coordinated
// omission), replies checked, timed and — with --verify — compared with the version model.
#pragma once

#include <sys/epoll.h>
#include <sys/resource.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codec.hpp"
#include "connection.hpp"
#include "op_source.hpp"
#include "options.hpp"
#include "run_stats.hpp"
#include "common/unique_fd.hpp"
#include "value_format.hpp"
#include "version_model.hpp"

namespace pd3::loadgen {

// Runs the load phase and the measured run against one server.
class Runner final : private ConnectionListener {
 public:
  explicit Runner(const Options& o);

  // The workload, the epoll instance and every connection. False with the reason in *error.
  [[nodiscard]] bool init(std::string* error);
  // --load: writes records 0 .. records − 1 at version 0. False if it failed (see failure()).
  [[nodiscard]] bool load();
  // The measured run. False if it failed (a connection error); errors and wrong values are in stats().
  [[nodiscard]] bool run();

  const RunStats& stats() const { return stats_; }
  const std::string& failure() const { return failure_; }
  ycsb::Distribution distribution() const { return ops_.distribution(); }

 private:
  // What drive() is doing: writing the records (--load) or the workload.
  enum class Phase : uint8_t { kLoad, kRun };

  // The loop: issue, flush, wait, read, until nothing is left to issue or in flight.
  [[nodiscard]] bool drive();
  [[nodiscard]] bool wait_events(uint64_t timeout_ns, int* n);
  void issue_closed(Connection& c);
  void issue_due();
  void issue_op(Connection& c, uint64_t start_ns, bool measured);
  void send(Connection& c, Request& r);
  void mark_dirty(Connection& c);
  [[nodiscard]] bool flush_dirty();
  void connection_failed(Connection& c);
  void start_window();
  Connection* free_connection();

  void on_entry(Connection& c, Request& r, uint32_t index, const ReplyEntry& e) override;
  void on_request_done(Connection& c, Request& r) override;
  void check_read(Request& r, uint32_t index, const ReplyEntry& e);
  ReadTicket ticket_of(const Request& r, uint32_t index) const {
    return r.count == 1 ? r.ticket : r.scan_tickets[index];
  }
  void report_bad_entry(const Request& r, uint32_t index, const ReplyEntry& e);

  const Options& o_;
  OpSource ops_;
  std::unique_ptr<RequestEncoder> encoder_;
  ValueFormat values_;
  VersionModel model_;
  UniqueFd epoll_;
  std::vector<std::unique_ptr<Connection>> conns_;
  std::vector<Connection*> dirty_;
  std::vector<uint8_t> is_dirty_;
  std::unique_ptr<uint8_t[]> scratch_;
  std::vector<uint64_t> possible_;  // scratch for wrong-value messages
  std::vector<epoll_event> events_ = std::vector<epoll_event>(256);
  bool have_pwait2_ = true;  // epoll_pwait2 (ns timeouts) until the kernel says ENOSYS
  RunStats stats_;
  std::string failure_;
  bool failed_ = false;

  Phase phase_ = Phase::kLoad;
  bool open_loop_ = false;
  bool issuing_ = false;
  bool top_up_all_ = false;
  uint64_t now_ = 0;              // the clock at the start of this loop turn
  uint64_t outstanding_ = 0;      // requests in flight on all connections
  uint64_t capacity_ = 0;         // connections × pipeline
  uint64_t last_activity_ns_ = 0;  // last bytes received (or issue after idling)
  uint64_t next_load_key_ = 0;
  uint64_t load_errors_ = 0;

  // The run's schedule and window.
  uint64_t t0_ = 0;     // measurement starts (after --warmup)
  uint64_t t_end_ = 0;  // --duration: nothing is issued from here on; UINT64_MAX with --operations
  uint64_t measured_issued_ = 0;
  bool window_started_ = false;
  uint64_t window_start_ns_ = 0;
  uint64_t last_done_ns_ = 0;
  rusage usage0_{};
  double interval_ns_ = 0;  // open loop
  uint64_t sched_start_ = 0;
  uint64_t next_index_ = 0;
  uint32_t rr_ = 0;

  uint64_t messages_ = 0;  // error lines printed (at most kMaxMessages)
};

}  // namespace pd3::loadgen
