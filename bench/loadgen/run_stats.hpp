// run_stats.hpp — the counters and latency figures of a run, as the report prints them.
#pragma once

#include <cstdint>

#include "common/latency_histogram.hpp"

namespace pd3::loadgen {

// Latencies of measured operations: the project's log-linear histogram (quantiles within ±3.2%)
// plus the exact maximum and sum.
class LatencyRecorder {
 public:
  void record(uint64_t ns) {
    hist_.record(ns);
    if (ns > max_ns_) max_ns_ = ns;
    sum_ns_ += ns;
    ++count_;
  }
  uint64_t count() const { return count_; }
  uint64_t max_ns() const { return max_ns_; }
  double mean_ns() const { return count_ == 0 ? 0 : double(sum_ns_) / double(count_); }
  LatencyHistogram::Snapshot snapshot() const { return hist_.snapshot(); }

 private:
  LatencyHistogram hist_;
  uint64_t max_ns_ = 0;
  uint64_t sum_ns_ = 0;
  uint64_t count_ = 0;
};

// Everything counted during a run (load phase included, except where noted).
struct RunStats {
  uint64_t ops = 0;                 // measured operations completed
  uint64_t requests = 0;            // measured requests completed (an RMW is two)
  uint64_t error_replies = 0;       // requests answered with an error (-ERR, a failure status)
  uint64_t unexpected_replies = 0;  // requests answered with something that does not fit them
  uint64_t connection_errors = 0;   // connections that failed (refused, reset, closed, bad framing)
  uint64_t lost_requests = 0;       // requests in flight on a failed connection
  uint64_t wrong_values = 0;        // --verify: reads that returned no possible version
  uint64_t verified_reads = 0;      // --verify: keys read and checked
  uint64_t not_found = 0;           // read entries answered "not found"
  uint64_t backlog = 0;             // open loop: scheduled in the window but never sent
  uint64_t loaded = 0;              // records written by --load
  double load_seconds = 0;
  double seconds = 0;               // measured window: its start to the last measured completion
  double cpu_user_s = 0;            // this process, over the measured window
  double cpu_sys_s = 0;
  LatencyRecorder latency;

  uint64_t errors() const { return error_replies + unexpected_replies + connection_errors; }
};

}  // namespace pd3::loadgen
