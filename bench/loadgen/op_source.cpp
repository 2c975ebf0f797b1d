// op_source.cpp — YCSB op → request mapping.
#include "op_source.hpp"

#include <algorithm>

#include "key_text.hpp"

namespace pd3::loadgen {

int OpSource::init(const Options& o, std::string* error) {
  ycsb::Options yo;
  yo.workload = o.workload;
  yo.distribution = o.distribution;
  yo.record_count = o.records;
  yo.operation_count = ycsb::kUnbounded;  // the run decides when to stop
  yo.seed = o.seed;
  yo.key_width = kKeyWidth;
  yo.key_prefix = kKeyPrefix;
  yo.value_size = o.value_size;
  scan_max_ = o.scan_max;
  const int rc = ycsb::Workload::create(yo, &workload_);
  if (rc != PD3_OK) *error = workloads::last_error();
  return rc;
}

PlannedOp OpSource::next() {
  ycsb::Op op;
  (void)workload_->next(&op);  // unbounded: always an op
  PlannedOp p;
  p.key = op.key;
  p.version = op.version;
  switch (op.type) {
    case ycsb::OpType::kRead: p.kind = RequestKind::kRead; break;
    case ycsb::OpType::kUpdate: p.kind = RequestKind::kUpdate; break;
    case ycsb::OpType::kInsert: p.kind = RequestKind::kInsert; break;
    case ycsb::OpType::kReadModifyWrite: p.kind = RequestKind::kRmwRead; break;
    case ycsb::OpType::kScan:
      p.kind = RequestKind::kScan;
      p.count = uint32_t(std::min<uint64_t>({op.scan_length, scan_max_, records() - op.key}));
      break;
  }
  return p;
}

}  // namespace pd3::loadgen
