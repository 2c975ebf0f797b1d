// client_workload.hpp — what one client connection sends: YCSB operations (native/workloads/ycsb.hpp)
// grouped into requests of one op, or, in verify mode, random GET/PUT/DEL over the keys the
// connection owns, with the exact answer each entry must get (a model of those keys), then a
// read-back of every owned key.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "client_options.hpp"
#include "protocol.hpp"
#include "ycsb.hpp"

namespace pd3::hashmap {

// The answer one entry must get (verify mode).
struct Expectation {
  EntryStatus status;
  uint64_t value;  // GET with kOk
};

// One request to send.
struct PlannedRequest {
  uint8_t op = PD3_BIN_GET;
  std::vector<uint64_t> keys;
  std::vector<uint64_t> values;         // PUT
  std::vector<Expectation> expect;      // empty: answers are not checked
};

// The requests of one connection.
class RequestSource {
 public:
  virtual ~RequestSource() = default;
  // The next request; false when the connection has nothing more to send.
  virtual bool next(PlannedRequest* out) = 0;
  // Ends the main phase early (time is up); the verify read-back still follows.
  virtual void end_main_phase() = 0;
};

// YCSB operations of one connection: READ → GET, UPDATE/INSERT → PUT, READ-MODIFY-WRITE → GET
// then PUT of the same key. Consecutive operations of one kind share a request, up to `batch`.
class YcsbSource : public RequestSource {
 public:
  // PD3_OK or PD3_E_INVAL (reason in pd3::workloads::last_error()).
  static int create(const ClientOptions& o, uint32_t connection, uint64_t requests, std::unique_ptr<RequestSource>* out);

  bool next(PlannedRequest* out) override;
  void end_main_phase() override { left_ = 0; }

 private:
  // One entry waiting to be placed in a request.
  struct Pending {
    uint8_t op;
    uint64_t key;
    uint64_t value;
  };

  YcsbSource(const ClientOptions& o, std::unique_ptr<ycsb::Workload> w, uint64_t requests)
      : o_(o), workload_(std::move(w)), left_(requests) {}
  // Moves the next YCSB operation's entries into pending_.
  void draw();

  const ClientOptions& o_;
  std::unique_ptr<ycsb::Workload> workload_;
  uint64_t left_;
  uint64_t sequential_ = 0;
  std::deque<Pending> pending_;
};

// Verify mode: connection c of N owns keys k ≡ c (mod N) in [0, key_range).
class VerifySource : public RequestSource {
 public:
  VerifySource(const ClientOptions& o, uint32_t connection, uint64_t requests);

  bool next(PlannedRequest* out) override;
  void end_main_phase() override { left_ = 0; }

 private:
  uint64_t pick_key();
  // The model: what the server must hold for `key` now.
  std::optional<uint64_t> expected(uint64_t key) const;

  const ClientOptions& o_;
  uint32_t connection_;
  uint64_t owned_;  // keys this connection owns
  uint64_t left_;
  ycsb::Xoshiro256 rng_;
  ycsb::Zipfian zipf_;
  uint64_t sequential_ = 0;
  std::vector<uint64_t> slot_order_;  // slot-order: owned key indexes sorted by home slot
  uint64_t sweep_next_ = 0;
  uint64_t serial_ = 0;  // makes every written value unique
  std::unordered_map<uint64_t, std::optional<uint64_t>> changed_;  // keys written or deleted so far
};

}  // namespace pd3::hashmap
