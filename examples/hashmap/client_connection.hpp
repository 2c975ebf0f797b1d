// client_connection.hpp — one client connection: keeps up to `depth` requests in flight, parses
// the responses (protocol.hpp), checks them against their expectations and times each request.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "client_latency.hpp"
#include "client_workload.hpp"

namespace pd3::hashmap {

// What a set of connections observed.
struct ClientResult {
  uint64_t requests = 0;
  uint64_t entries = 0;
  uint64_t not_found = 0;   // entries answered kNotFound
  uint64_t errors = 0;      // entries answered with a failure status (bad key/value, full, remote error)
  uint64_t verified = 0;    // entries checked against an expectation
  uint64_t mismatches = 0;  // ... that did not match
  uint64_t broken = 0;      // connections that failed (closed, malformed response)
  LatencyHistogram latency;

  void merge(const ClientResult& o);
};

// A connected, non-blocking socket and its pipeline.
class ClientConnection {
 public:
  ClientConnection(int fd, std::unique_ptr<RequestSource> source, uint32_t depth, ClientResult* result);
  ~ClientConnection();
  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;

  int fd() const { return fd_; }
  RequestSource& source() { return *source_; }

  // Tops the pipeline up and writes what the socket takes. False once the connection failed.
  bool pump();
  // Reads and handles responses. False once the connection failed.
  bool on_readable();

  bool wants_write() const { return out_start_ < out_.size(); }
  // Nothing left to send and every answer received (or the connection failed).
  bool done() const { return failed_ || (exhausted_ && inflight_.empty()); }

 private:
  // A request on the wire.
  struct InFlight {
    uint64_t sent_ns;
    uint8_t op;
    uint16_t count;
    std::vector<uint64_t> keys;
    std::vector<Expectation> expect;
  };

  // Handles every complete response in in_. False on a malformed one.
  bool parse();
  void check(const InFlight& r, uint16_t i, EntryStatus status, uint64_t value);
  bool fail(const std::string& why);

  int fd_;
  std::unique_ptr<RequestSource> source_;
  uint32_t depth_;
  ClientResult* result_;
  bool exhausted_ = false;
  bool failed_ = false;
  std::deque<InFlight> inflight_;
  std::vector<uint8_t> out_;
  size_t out_start_ = 0;
  std::vector<uint8_t> in_;
  PlannedRequest planned_;  // scratch
};

}  // namespace pd3::hashmap
