// flow_event_queue.hpp — a mirror backend's flow events (open, bytes, close) carried from the
// capture thread to the thread that parses them: the agent's bridge to parsers written in TS, which
// can only run on the JS thread. Records in a single-producer single-consumer byte ring; bytes that do not
// fit are dropped and the flow's next bytes are marked after_gap, so the parser resyncs instead of
// trusting a request boundary it never saw. Closes are never dropped.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <deque>
#include <unordered_set>

#include "dpu/flow_callbacks.hpp"
#include "dpu/spsc_byte_ring.hpp"

namespace pd3 {

// One queued event as the consumer sees it; `data` is valid during the drain callback only.
struct FlowEvent {
  enum class Kind : uint8_t { kOpen = 1, kData = 2, kClose = 3 };
  Kind kind;
  bool flag;            // kOpen: synced; kData: after_gap
  uint64_t flow_id;
  uint64_t capture_ns;  // kData: when the backend saw the bytes
  const uint8_t* data;  // kData only
  uint32_t len;
};

// Counters of a FlowEventQueue (relaxed snapshots, any thread).
struct FlowEventStats {
  uint64_t events = 0;         // events queued
  uint64_t bytes = 0;          // data bytes queued
  uint64_t dropped_bytes = 0;  // data bytes that did not fit (their flows resync)
  uint64_t dropped_opens = 0;  // opens that did not fit (the flow is then first seen mid-stream)
  uint64_t wakeups = 0;        // times the consumer was woken
};

// SPSC: the producer side is callbacks() (one backend thread), the consumer side drain() (one
// other thread).
class FlowEventQueue {
 public:
  static constexpr uint32_t kMaxChunk = 64u << 10;  // a larger delivery is queued in pieces

  // `bytes`: ring capacity, a power of two ≥ 4 * kMaxChunk (the caller checks: a chunk must fit in
  // half of it). `wake` is called
  // on the producer's thread when events arrive while the consumer is not already due to drain
  // (after rearm()); it must not block.
  FlowEventQueue(size_t bytes, std::function<void()> wake);

  // Producer: the callbacks to give PacketMirror::start or TeeProxy::start.
  FlowCallbacks callbacks();

  // Consumer: call before drain() when woken: events queued after this call wake it again.
  void rearm();
  // Consumer: calls fn(const FlowEvent&) for up to `max` events, oldest first. Returns how many.
  size_t drain(size_t max, const std::function<void(const FlowEvent&)>& fn);

  FlowEventStats stats() const;

 private:
  // What precedes the data in a record.
  struct Header {
    uint64_t flow_id;
    uint64_t capture_ns;
    uint8_t kind;
    uint8_t flag;
    uint8_t reserved[6];
  };

  bool push(FlowEvent::Kind kind, bool flag, uint64_t flow_id, uint64_t capture_ns, const uint8_t* data, uint32_t len);
  void on_open(uint64_t id, bool synced);
  void on_deliver(uint64_t id, const uint8_t* data, size_t len, bool after_gap);
  void on_close(uint64_t id);
  void retry_closes();
  void wake_consumer();

  SpscByteRing ring_;
  std::function<void()> wake_;
  alignas(64) std::atomic<bool> armed_{false};  // true: the consumer was woken and has not rearmed
  // Producer-only state.
  std::unordered_set<uint64_t> gapped_;  // flows whose bytes were dropped since their last delivery
  std::deque<uint64_t> closes_;          // closes waiting for room, oldest first
  // Statistics: one writer each (producer), relaxed.
  std::atomic<uint64_t> events_{0}, bytes_{0}, dropped_bytes_{0}, dropped_opens_{0}, wakeups_{0};
};

}  // namespace pd3
