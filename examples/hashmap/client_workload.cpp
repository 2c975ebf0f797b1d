// client_workload.cpp — YCSB grouping and the verify model.
#include "client_workload.hpp"

#include <algorithm>

#include "key_hash.hpp"

namespace pd3::hashmap {

namespace {

uint64_t value_of(const ycsb::Workload& w, uint64_t key, uint64_t version) {
  uint8_t bytes[kValueBytes];
  w.value_of(key, version, bytes);
  return load_u64(bytes);
}

}  // namespace

int YcsbSource::create(const ClientOptions& o, uint32_t connection, uint64_t requests,
                       std::unique_ptr<RequestSource>* out) {
  ycsb::Options yo;
  yo.workload = o.workload;
  switch (o.order) {
    case KeyOrder::kUniform: yo.distribution = ycsb::Distribution::kUniform; break;
    case KeyOrder::kZipfian: yo.distribution = ycsb::Distribution::kZipfian; break;
    case KeyOrder::kLatest: yo.distribution = ycsb::Distribution::kLatest; break;
    default: yo.distribution = ycsb::Distribution::kDefault; break;  // sequential overrides keys below
  }
  yo.record_count = o.records;
  yo.seed = o.seed * 0x9E3779B97F4A7C15ull + connection;
  yo.theta = o.theta;
  yo.value_size = kValueBytes;
  yo.key_width = ycsb::kMaxKeyWidth;
  std::unique_ptr<ycsb::Workload> w;
  if (const int rc = ycsb::Workload::create(yo, &w); rc != PD3_OK) return rc;
  out->reset(new YcsbSource(o, std::move(w), requests));
  return PD3_OK;
}

void YcsbSource::draw() {
  ycsb::Op op;
  workload_->next(&op);  // unbounded: always an op
  uint64_t key = op.key;
  if (o_.order == KeyOrder::kSequential && op.type != ycsb::OpType::kInsert) key = sequential_++ % o_.records;
  switch (op.type) {
    case ycsb::OpType::kRead: pending_.push_back({PD3_BIN_GET, key, 0}); break;
    case ycsb::OpType::kReadModifyWrite:
      pending_.push_back({PD3_BIN_GET, key, 0});
      pending_.push_back({PD3_BIN_PUT, key, value_of(*workload_, key, op.version)});
      break;
    default: pending_.push_back({PD3_BIN_PUT, key, value_of(*workload_, key, op.version)}); break;
  }
}

bool YcsbSource::next(PlannedRequest* out) {
  if (left_ == 0) return false;
  --left_;
  out->keys.clear();
  out->values.clear();
  out->expect.clear();
  if (pending_.empty()) draw();
  out->op = pending_.front().op;
  while (out->keys.size() < o_.batch) {
    if (pending_.empty()) draw();
    if (pending_.front().op != out->op) break;
    out->keys.push_back(pending_.front().key);
    if (out->op == PD3_BIN_PUT) out->values.push_back(pending_.front().value);
    pending_.pop_front();
  }
  return true;
}

VerifySource::VerifySource(const ClientOptions& o, uint32_t connection, uint64_t requests)
    : o_(o),
      connection_(connection),
      owned_((o.key_range - connection + o.connections - 1) / o.connections),
      left_(requests),
      rng_(o.seed * 0xD1B54A32D192ED03ull + connection),
      zipf_(o.theta) {
  if (o.order != KeyOrder::kSlotOrder) return;
  slot_order_.resize(owned_);
  for (uint64_t j = 0; j < owned_; ++j) slot_order_[j] = j;
  const auto home = [&](uint64_t j) { return KeyHash::of(connection_ + j * o_.connections).home(o_.slots); };
  std::sort(slot_order_.begin(), slot_order_.end(), [&](uint64_t a, uint64_t b) { return home(a) < home(b); });
}

uint64_t VerifySource::pick_key() {
  uint64_t j;
  switch (o_.order) {
    case KeyOrder::kSequential: j = sequential_++ % owned_; break;
    case KeyOrder::kSlotOrder: j = slot_order_[sequential_++ % owned_]; break;
    case KeyOrder::kZipfian: j = zipf_.rank(rng_.next_double(), owned_); break;
    default: j = rng_.next_below(owned_); break;
  }
  return connection_ + j * o_.connections;
}

std::optional<uint64_t> VerifySource::expected(uint64_t key) const {
  const auto it = changed_.find(key);
  if (it != changed_.end()) return it->second;
  if (key < o_.records) return load_value(key);
  return std::nullopt;
}

bool VerifySource::next(PlannedRequest* out) {
  out->keys.clear();
  out->values.clear();
  out->expect.clear();
  if (left_ == 0) {
    // Read-back: every owned key once, in order.
    if (!o_.sweep || sweep_next_ >= owned_) return false;
    out->op = PD3_BIN_GET;
    for (; sweep_next_ < owned_ && out->keys.size() < o_.batch; ++sweep_next_) {
      const uint64_t key = connection_ + sweep_next_ * o_.connections;
      const std::optional<uint64_t> v = expected(key);
      out->keys.push_back(key);
      out->expect.push_back({v ? EntryStatus::kOk : EntryStatus::kNotFound, v.value_or(0)});
    }
    return true;
  }
  --left_;
  const uint64_t total = uint64_t(o_.mix_get) + o_.mix_put + o_.mix_del;
  const uint64_t draw = rng_.next_below(total);
  out->op = draw < o_.mix_get ? PD3_BIN_GET : draw < uint64_t(o_.mix_get) + o_.mix_put ? PD3_BIN_PUT : PD3_BIN_DEL;
  for (uint32_t i = 0; i < o_.batch; ++i) {
    const uint64_t key = pick_key();
    const std::optional<uint64_t> v = expected(key);
    out->keys.push_back(key);
    if (out->op == PD3_BIN_GET) {
      out->expect.push_back({v ? EntryStatus::kOk : EntryStatus::kNotFound, v.value_or(0)});
    } else if (out->op == PD3_BIN_PUT) {
      const uint64_t value = load_value(~(o_.seed ^ (uint64_t(connection_) << 40) ^ ++serial_));
      out->values.push_back(value);
      out->expect.push_back({EntryStatus::kOk, 0});
      changed_[key] = value;
    } else {
      out->expect.push_back({v ? EntryStatus::kOk : EntryStatus::kNotFound, 0});
      changed_[key] = std::nullopt;
    }
  }
  return true;
}

}  // namespace pd3::hashmap
