// request_tap.cpp — see request_tap.hpp: per-flow sync state, zero-copy parsing of whole requests,
// bounded pending buffers for requests split across deliveries.
#include "dpu/request_tap.hpp"

#include <algorithm>
#include <utility>

#include "common/error.hpp"
#include "common/net.hpp"
#include "pd3/status.h"

namespace pd3 {

namespace {

// A pending buffer that grew past this is freed once empty, so a burst of large requests does not
// leave every flow holding its peak.
constexpr size_t kKeptCapacity = 64u << 10;
// parse_request calls in a row that fill the output array without consuming a byte before the tap
// stops believing the parser (a stateful parser may hand out accesses from its state that way; one
// that never progresses would otherwise hold the backend's thread forever).
constexpr uint32_t kMaxCallsWithoutProgress = 16;
constexpr uint32_t kMaxFlowsLimit = 1u << 24;
constexpr uint64_t kMaxPendingLimit = 1ull << 30;
// Where a zero-length key with no pointer points, so the queue never copies from NULL.
constexpr uint8_t kEmptyKey = 0;

// Adds to a counter only this thread writes. A load and a store instead of fetch_add: there is no
// other writer to race with, so the read-modify-write needs no locked instruction. relaxed:
// readers want some recent value, and nothing else is published through the counters.
void add(std::atomic<uint64_t>& counter, uint64_t n = 1) {
  counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

void set(std::atomic<uint64_t>& counter, uint64_t v) {
  // relaxed: as add().
  counter.store(v, std::memory_order_relaxed);
}

}  // namespace

int RequestTap::create(const RequestTapOptions& options, ParserHandle parser, AccessQueue* queue,
                       std::unique_ptr<RequestTap>* out) {
  clear_error();
  if (!parser) return fail(PD3_E_INVAL, "request tap: no parser");
  if (!queue) return fail(PD3_E_INVAL, "request tap: no access queue");
  if (options.max_flows == 0 || options.max_flows > kMaxFlowsLimit)
    return fail(PD3_E_INVAL, "request tap: max_flows must be 1..%u, got %u", kMaxFlowsLimit, options.max_flows);
  if (options.max_pending_bytes == 0 || options.max_pending_bytes > kMaxPendingLimit)
    return fail(PD3_E_INVAL, "request tap: max_pending_bytes must be 1..%llu, got %llu",
                (unsigned long long)kMaxPendingLimit, (unsigned long long)options.max_pending_bytes);
  if (options.max_pending_total < options.max_pending_bytes)
    return fail(PD3_E_INVAL, "request tap: max_pending_total (%llu) is below max_pending_bytes (%llu)",
                (unsigned long long)options.max_pending_total, (unsigned long long)options.max_pending_bytes);
  out->reset(new RequestTap(options, std::move(parser), queue));
  return PD3_OK;
}

RequestTap::RequestTap(const RequestTapOptions& options, ParserHandle parser, AccessQueue* queue)
    : options_(options), parser_(std::move(parser)), queue_(queue), accesses_(kMaxAccesses) {}

RequestTap::~RequestTap() = default;

FlowCallbacks RequestTap::callbacks() {
  FlowCallbacks cb;
  cb.open = [this](uint64_t id, const FlowKey&, bool synced) { on_open(id, synced); };
  cb.deliver = [this](uint64_t id, const uint8_t* data, size_t len, bool after_gap) {
    on_deliver(id, data, len, after_gap, now_ns());
  };
  cb.close = [this](uint64_t id, FlowEnd) { on_close(id); };
  return cb;
}

RequestTapStats RequestTap::stats() const {
  RequestTapStats s;
  // relaxed: statistics (see add()).
#define PD3_TAP_READ(name) s.name = counters_.name.load(std::memory_order_relaxed);
  PD3_REQUEST_TAP_STATS_FIELDS(PD3_TAP_READ)
#undef PD3_TAP_READ
  return s;
}

void RequestTap::on_open(uint64_t id, bool synced) {
  // A backend never reuses an id; if one did, the old flow's state must not leak into the new one.
  on_close(id);
  open_flow(id, synced);
}

void RequestTap::on_deliver(uint64_t id, const uint8_t* data, size_t len, bool after_gap, uint64_t capture_ns) {
  add(counters_.bytes_delivered, len);
  auto it = flows_.find(id);
  // A flow delivered before it was opened was first seen mid-stream: nothing says where its
  // requests start.
  Flow* f = it != flows_.end() ? &it->second : open_flow(id, false);
  if (!f) {
    add(counters_.bytes_refused, len);
    return;
  }
  capture_ns_ = capture_ns;
  if (after_gap) {
    add(counters_.gaps);
    // The unfinished request before the gap can never be completed: its rest is in the gap.
    lose_sync(*f);
  }
  feed(*f, data, len);
}

void RequestTap::on_close(uint64_t id) {
  auto it = flows_.find(id);
  if (it == flows_.end()) return;
  drop_pending(it->second);  // an unfinished last request
  flows_.erase(it);          // ParserFlow's destructor calls flow_close
  set(counters_.flows_open, flows_.size());
}

RequestTap::Flow* RequestTap::open_flow(uint64_t id, bool synced) {
  if (flows_.size() >= options_.max_flows) {
    add(counters_.flows_refused);
    return nullptr;
  }
  ParserFlow parser;
  if (ParserFlow::open(parser_, &parser) != PD3_OK) {
    add(counters_.flows_refused);
    return nullptr;
  }
  Flow& f = flows_[id];
  f.parser = std::move(parser);
  f.sync = synced ? Sync::kSynced : Sync::kLost;
  add(counters_.flows_total);
  if (!synced) {
    add(counters_.flows_unsynced);
    add(counters_.desyncs);
  }
  set(counters_.flows_open, flows_.size());
  return &f;
}

// Takes `len` new bytes of the flow. Invariant between steps: an out-of-sync flow holds nothing
// pending, and a pending buffer always starts at a request start (or a resync candidate).
void RequestTap::feed(Flow& f, const uint8_t* data, size_t len) {
  while (len > 0) {
    if (f.sync == Sync::kLost) {
      const int64_t at = f.parser.resync(data, len);
      if (at < 0) {
        add(counters_.bytes_skipped, len);
        return;
      }
      add(counters_.resyncs);
      add(counters_.bytes_skipped, uint64_t(at));
      data += at;
      len -= size_t(at);
      f.sync = Sync::kCandidate;
      continue;
    }
    if (f.pending.empty()) {
      // Zero copy: parse straight from the delivery, keep only an unfinished tail.
      const size_t done = parse(f, data, len);
      keep_tail(f, data + done, len - done);
      return;
    }
    // An unfinished request is held: add the new bytes to it, as many as the bounds allow.
    const size_t held = f.pending.size();
    const size_t piece = size_t(std::min<uint64_t>(len, pending_room(f)));
    if (piece == 0) {
      add(counters_.pending_overflows);
      // The new bytes continue the dropped request: they are resynced like bytes after a gap.
      lose_sync(f);
      continue;
    }
    f.pending.insert(f.pending.end(), data, data + piece);
    pending_total_ += piece;
    const size_t done = parse(f, f.pending.data(), f.pending.size());
    if (done >= held) {
      // The held request is finished (or dropped): the rest is still in `data`, parse it there
      // instead of from the copy.
      const size_t from_data = done - held;
      pending_total_ -= f.pending.size();
      if (f.pending.capacity() > kKeptCapacity) {
        std::vector<uint8_t>().swap(f.pending);
      } else {
        f.pending.clear();
      }
      data += from_data;
      len -= from_data;
    } else {
      f.pending.erase(f.pending.begin(), f.pending.begin() + ptrdiff_t(done));
      pending_total_ -= done;
      data += piece;
      len -= piece;
    }
    set(counters_.pending_bytes, pending_total_);
  }
}

// Parses whole requests from buf and pushes their accesses. Returns how many bytes at the start of
// buf are done with (parsed, or skipped by a resync); the rest is the start of an unfinished
// request. After a protocol error with no plausible start left the flow is out of sync and the
// whole buffer is done with.
size_t RequestTap::parse(Flow& f, const uint8_t* buf, size_t len) {
  size_t off = 0;
  uint32_t calls_without_progress = 0;
  while (off < len) {
    uint32_t n = 0;
    size_t used = 0;
    const int rc = f.parser.parse_request(buf + off, len - off, accesses_.data(), kMaxAccesses, &n, &used);
    add(counters_.parse_calls);
    if (rc == PD3_OK) {
      emit(n);
      if (used > 0) {
        f.sync = Sync::kSynced;
        add(counters_.request_calls);
        add(counters_.bytes_parsed, used);
        off += used;
        calls_without_progress = 0;
        continue;
      }
      if (n < kMaxAccesses) break;  // the request at `off` is unfinished: wait for more bytes
      if (++calls_without_progress < kMaxCallsWithoutProgress) continue;
    }
    // The bytes at `off` are not a request. parser.h: resync from the next byte, since resync
    // may find the same start plausible again.
    if (f.sync == Sync::kSynced) {
      add(counters_.parse_errors);
      add(counters_.desyncs);
    } else {
      add(counters_.resync_rejects);
    }
    f.sync = Sync::kLost;
    const int64_t at = len - off > 1 ? f.parser.resync(buf + off + 1, len - off - 1) : -1;
    if (at < 0) {
      add(counters_.bytes_skipped, len - off);
      return len;
    }
    add(counters_.resyncs);
    add(counters_.bytes_skipped, 1 + uint64_t(at));
    off += 1 + size_t(at);
    f.sync = Sync::kCandidate;
    calls_without_progress = 0;
  }
  return off;
}

void RequestTap::emit(uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) {
    const pd3_access& a = accesses_[i];
    switch (a.op) {
      case PD3_ACCESS_READ: add(counters_.accesses_read); break;
      case PD3_ACCESS_WRITE: add(counters_.accesses_write); break;
      default: add(counters_.accesses_delete); break;  // ParserFlow lets only the three ops through
    }
    if (!queue_->push(a.op, a.key ? a.key : &kEmptyKey, a.key_len, capture_ns_)) add(counters_.queue_full);
  }
}

void RequestTap::keep_tail(Flow& f, const uint8_t* tail, size_t len) {
  if (len == 0) return;
  if (len > pending_room(f)) {
    add(counters_.pending_overflows);
    add(counters_.bytes_skipped, len);
    lose_sync(f);
    return;
  }
  f.pending.assign(tail, tail + len);
  pending_total_ += len;
  set(counters_.pending_bytes, pending_total_);
}

uint64_t RequestTap::pending_room(const Flow& f) const {
  const uint64_t flow_room = options_.max_pending_bytes - f.pending.size();
  const uint64_t total_room = options_.max_pending_total - pending_total_;
  return std::min(flow_room, total_room);
}

void RequestTap::drop_pending(Flow& f) {
  if (f.pending.empty()) return;
  add(counters_.bytes_skipped, f.pending.size());
  pending_total_ -= f.pending.size();
  std::vector<uint8_t>().swap(f.pending);
  set(counters_.pending_bytes, pending_total_);
}

void RequestTap::lose_sync(Flow& f) {
  drop_pending(f);
  if (f.sync != Sync::kLost) add(counters_.desyncs);
  f.sync = Sync::kLost;
}

}  // namespace pd3
