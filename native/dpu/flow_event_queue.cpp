// flow_event_queue.cpp — see flow_event_queue.hpp.
#include "dpu/flow_event_queue.hpp"

#include <algorithm>
#include <cstring>

#include "common/net.hpp"

namespace pd3 {

namespace {

// Single writer: a relaxed load and store instead of a locked add (statistics).
void bump(std::atomic<uint64_t>& c, uint64_t n = 1) {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

}  // namespace

FlowEventQueue::FlowEventQueue(size_t bytes, std::function<void()> wake) : ring_(bytes), wake_(std::move(wake)) {}

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
  uint8_t* at = ring_.reserve(sizeof(Header) + uint64_t(len));
  if (at == nullptr) return false;
  Header h{};
  h.flow_id = flow_id;
  h.capture_ns = capture_ns;
  h.kind = uint8_t(kind);
  h.flag = flag ? 1 : 0;
  std::memcpy(at, &h, sizeof h);
  if (len != 0) std::memcpy(at + sizeof h, data, len);
  ring_.commit();
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
    closes_.pop_front();
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
  return ring_.drain(max, [&](const uint8_t* rec, uint32_t len) {
    Header h;
    std::memcpy(&h, rec, sizeof h);
    fn(FlowEvent{FlowEvent::Kind(h.kind), h.flag != 0, h.flow_id, h.capture_ns, rec + sizeof h,
                 uint32_t(len - sizeof h)});
  });
}

FlowEventStats FlowEventQueue::stats() const {
  // relaxed: statistics.
  return FlowEventStats{events_.load(std::memory_order_relaxed), bytes_.load(std::memory_order_relaxed),
                        dropped_bytes_.load(std::memory_order_relaxed), dropped_opens_.load(std::memory_order_relaxed),
                        wakeups_.load(std::memory_order_relaxed)};
}

}  // namespace pd3
