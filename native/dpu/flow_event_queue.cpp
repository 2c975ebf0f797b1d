// flow_event_queue.cpp — see flow_event_queue.hpp.
#include "dpu/flow_event_queue.hpp"

#include <algorithm>
#include <cstring>

#include "common/net.hpp"

namespace pd3 {

namespace {

// Records (and so positions) are multiples of the header's size: a pad header always fits
// before the ring's end.
constexpr uint64_t record_size(uint64_t n) { return (n + 31) & ~uint64_t{31}; }

// Single writer: a relaxed load and store instead of a locked add (statistics).
void bump(std::atomic<uint64_t>& c, uint64_t n = 1) {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

}  // namespace

FlowEventQueue::FlowEventQueue(size_t bytes, std::function<void()> wake)
    : size_(bytes), mask_(bytes - 1), ring_(new uint8_t[bytes]), wake_(std::move(wake)) {}

FlowCallbacks FlowEventQueue::callbacks() {
  FlowCallbacks cb;
  cb.open = [this](uint64_t id, const FlowKey&, bool synced) { on_open(id, synced); };
  cb.deliver = [this](uint64_t id, const uint8_t* data, size_t len, bool after_gap) {
    on_deliver(id, data, len, after_gap);
  };
  cb.close = [this](uint64_t id, FlowEnd) { on_close(id); };
  return cb;
}

bool FlowEventQueue::push(FlowEvent::Kind kind, bool flag, uint64_t flow_id, uint64_t capture_ns,
                          const uint8_t* data, uint32_t len) {
  const uint64_t rec = record_size(sizeof(Header) + len);
  // relaxed: only this thread writes tail.
  const uint64_t tail = tail_.load(std::memory_order_relaxed);
  const uint64_t to_end = size_ - (tail & mask_);
  const uint64_t pad = to_end < rec ? to_end : 0;
  // acquire: pairs with drain()'s release of head; the bytes it freed are ours to reuse.
  const uint64_t head = head_.load(std::memory_order_acquire);
  if (tail + pad + rec - head > size_) return false;
  if (pad != 0) {
    Header p{};
    p.len = 0;
    std::memcpy(ring_.get() + (tail & mask_), &p, sizeof p);
  }
  const uint64_t at = tail + pad;
  Header h{};
  h.len = uint32_t(rec);
  h.data_len = len;
  h.flow_id = flow_id;
  h.capture_ns = capture_ns;
  h.kind = uint8_t(kind);
  h.flag = flag ? 1 : 0;
  std::memcpy(ring_.get() + (at & mask_), &h, sizeof h);
  if (len != 0) std::memcpy(ring_.get() + ((at + sizeof h) & mask_), data, len);
  // release: the record's bytes are visible to a consumer that acquires this tail.
  tail_.store(at + rec, std::memory_order_release);
  bump(events_);
  return true;
}

void FlowEventQueue::wake_consumer() {
  // seq_cst fence: orders our tail store before the armed_ read against the consumer's armed_
  // store and tail load (rearm's fence): either we see its "not armed" and wake it, or its drain
  // sees our record. Without it both could miss each other and the event would wait.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // relaxed: the fences above and in rearm() provide the ordering.
  if (armed_.exchange(true, std::memory_order_relaxed)) return;
  bump(wakeups_);
  if (wake_) wake_();
}

void FlowEventQueue::retry_closes() {
  while (!closes_.empty() && push(FlowEvent::Kind::kClose, false, closes_.front(), 0, nullptr, 0))
    closes_.erase(closes_.begin());
}

void FlowEventQueue::on_open(uint64_t id, bool synced) {
  retry_closes();
  if (!push(FlowEvent::Kind::kOpen, synced, id, 0, nullptr, 0)) {
    bump(dropped_opens_);
    gapped_.insert(id);  // its first bytes then arrive after_gap: nothing says where requests start
  }
  wake_consumer();
}

void FlowEventQueue::on_deliver(uint64_t id, const uint8_t* data, size_t len, bool after_gap) {
  retry_closes();
  const uint64_t now = now_ns();
  bool gap = after_gap || gapped_.erase(id) != 0;
  while (len > 0) {
    const uint32_t n = uint32_t(std::min<size_t>(len, kMaxChunk));
    if (push(FlowEvent::Kind::kData, gap, id, now, data, n)) {
      bump(bytes_, n);
      gap = false;
    } else {
      bump(dropped_bytes_, n);
      gap = true;  // the next piece that fits follows a hole
    }
    data += n;
    len -= n;
  }
  if (gap) gapped_.insert(id);  // the delivery's tail was dropped: the next one follows a hole
  wake_consumer();
}

void FlowEventQueue::on_close(uint64_t id) {
  retry_closes();
  gapped_.erase(id);
  if (!closes_.empty() || !push(FlowEvent::Kind::kClose, false, id, 0, nullptr, 0)) closes_.push_back(id);
  wake_consumer();
}

void FlowEventQueue::rearm() {
  // relaxed store + seq_cst fence: see wake_consumer().
  armed_.store(false, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

size_t FlowEventQueue::drain(size_t max, const std::function<void(const FlowEvent&)>& fn) {
  // relaxed: only this thread writes head.
  uint64_t head = head_.load(std::memory_order_relaxed);
  // acquire: pairs with push()'s release; the records before tail are complete.
  const uint64_t tail = tail_.load(std::memory_order_acquire);
  size_t n = 0;
  while (head < tail && n < max) {
    Header h;
    std::memcpy(&h, ring_.get() + (head & mask_), sizeof h);
    if (h.len == 0) {  // pad to the ring's end
      head += size_ - (head & mask_);
      continue;
    }
    const FlowEvent e{FlowEvent::Kind(h.kind), h.flag != 0, h.flow_id, h.capture_ns,
                      ring_.get() + ((head + sizeof h) & mask_), h.data_len};
    fn(e);
    head += h.len;
    ++n;
  }
  // release: our reads of the freed records happen before the producer reuses their bytes.
  head_.store(head, std::memory_order_release);
  return n;
}

FlowEventStats FlowEventQueue::stats() const {
  // relaxed: statistics.
  return FlowEventStats{events_.load(std::memory_order_relaxed), bytes_.load(std::memory_order_relaxed),
                        dropped_bytes_.load(std::memory_order_relaxed), dropped_opens_.load(std::memory_order_relaxed),
                        wakeups_.load(std::memory_order_relaxed)};
}

}  // namespace pd3
