// op_source.hpp — the YCSB operation stream (one seeded ycsb::Workload for the whole run, so keys,
// versions and inserts are exactly ycsb.hpp's sequence for --seed) mapped to the requests sent:
// READ → read, UPDATE / INSERT → write, READ-MODIFY-WRITE → read then write, SCAN → one read of
// min(scan length, --scan-max, records that exist from the key on) consecutive keys.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "options.hpp"
#include "request.hpp"
#include "ycsb.hpp"

namespace pd3::loadgen {

// The first request of the next operation.
struct PlannedOp {
  RequestKind kind = RequestKind::kRead;  // kRead, kUpdate, kInsert, kScan or kRmwRead
  uint64_t key = 0;
  uint64_t version = 0;
  uint32_t count = 1;
};

// Draws operations from the workload.
class OpSource {
 public:
  // PD3_OK, or a negative status with the reason in *error.
  [[nodiscard]] int init(const Options& o, std::string* error);
  PlannedOp next();
  // Records existing after the operations drawn so far (inserts add one each).
  uint64_t records() const { return workload_->inserted_count(); }
  ycsb::Distribution distribution() const { return workload_->options().distribution; }

 private:
  std::unique_ptr<ycsb::Workload> workload_;
  uint32_t scan_max_ = 1;
};

}  // namespace pd3::loadgen
