// flow_event_queue_test.cpp — the capture → parser-thread queue of the TS-parser bridge: events in
// order, deliveries split into pieces, drops marked as gaps, closes never lost, and a producer /
// consumer stress with the wake-up handshake (no event ever waits for a wake-up that never comes).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "dpu/flow_event_queue.hpp"
#include "harness.hpp"
#include "util.hpp"

using pd3::FlowEvent;
using pd3::FlowEventQueue;

namespace {

// Everything drained, as text: "open 1 synced", "data 1 gap 5", "close 1".
std::vector<std::string> drain_all(FlowEventQueue& q, std::string* bytes = nullptr) {
  std::vector<std::string> out;
  q.rearm();
  q.drain(1u << 20, [&](const FlowEvent& e) {
    switch (e.kind) {
      case FlowEvent::Kind::kOpen:
        out.push_back("open " + std::to_string(e.flow_id) + (e.flag ? " synced" : ""));
        break;
      case FlowEvent::Kind::kData:
        out.push_back("data " + std::to_string(e.flow_id) + (e.flag ? " gap " : " ") + std::to_string(e.len));
        if (bytes) bytes->append(reinterpret_cast<const char*>(e.data), e.len);
        break;
      case FlowEvent::Kind::kClose:
        out.push_back("close " + std::to_string(e.flow_id));
        break;
    }
  });
  return out;
}

}  // namespace

TEST(flow_event_queue_keeps_order_and_splits_large_deliveries) {
  int wakes = 0;
  FlowEventQueue q(1u << 20, [&] { ++wakes; });
  pd3::FlowCallbacks cb = q.callbacks();
  const std::string big(FlowEventQueue::kMaxChunk * 2 + 10, 'x');
  cb.open(1, pd3::FlowKey{}, true);
  cb.deliver(1, reinterpret_cast<const uint8_t*>("GET a"), 5, false);
  cb.deliver(1, reinterpret_cast<const uint8_t*>(big.data()), big.size(), true);
  cb.close(1, pd3::FlowEnd::kFin);
  CHECK_EQ(wakes, 1);  // one wake-up until the consumer rearms
  std::string bytes;
  const auto got = drain_all(q, &bytes);
  const std::vector<std::string> want = {"open 1 synced", "data 1 5", "data 1 gap 65536", "data 1 65536",
                                         "data 1 10", "close 1"};
  CHECK(got == want);
  CHECK(bytes == "GET a" + big);
  cb.open(2, pd3::FlowKey{}, false);
  CHECK_EQ(wakes, 2);  // rearmed by the drain: the next event wakes again
  CHECK(drain_all(q) == std::vector<std::string>{"open 2"});
}

TEST(flow_event_queue_marks_dropped_bytes_as_a_gap_and_never_loses_a_close) {
  FlowEventQueue q(4 * FlowEventQueue::kMaxChunk, nullptr);
  pd3::FlowCallbacks cb = q.callbacks();
  // Records of exactly kMaxChunk bytes (header + data): four fill the ring to the last byte.
  const std::string chunk(FlowEventQueue::kMaxChunk - 32, 'y');
  for (int i = 0; i < 5; ++i) cb.deliver(7, reinterpret_cast<const uint8_t*>(chunk.data()), chunk.size(), false);
  CHECK_EQ(q.stats().dropped_bytes, uint64_t(chunk.size()));
  cb.close(7, pd3::FlowEnd::kFin);  // no room: kept until there is
  cb.close(8, pd3::FlowEnd::kReset);
  auto got = drain_all(q);
  CHECK_EQ(got.size(), 4u);
  CHECK(std::find(got.begin(), got.end(), "close 7") == got.end());  // not yet: it did not fit
  // The next event of any flow first queues the kept closes, in order.
  cb.open(9, pd3::FlowKey{}, true);
  got = drain_all(q);
  CHECK(got == (std::vector<std::string>{"close 7", "close 8", "open 9 synced"}));
  // Flow 9 loses bytes: its next delivery that fits says gap, and only that one.
  for (int i = 0; i < 5; ++i) cb.deliver(9, reinterpret_cast<const uint8_t*>(chunk.data()), chunk.size(), false);
  drain_all(q);
  cb.deliver(9, reinterpret_cast<const uint8_t*>("z"), 1, false);
  CHECK(drain_all(q) == std::vector<std::string>{"data 9 gap 1"});
  cb.deliver(9, reinterpret_cast<const uint8_t*>("z"), 1, false);
  CHECK(drain_all(q) == std::vector<std::string>{"data 9 1"});
  // An open that does not fit: the flow's first bytes then say gap (nothing marks a boundary).
  uint64_t unlucky = 1000;
  while (q.stats().dropped_opens == 0) cb.open(++unlucky, pd3::FlowKey{}, true);  // until the ring is full
  got = drain_all(q);
  CHECK(got.back() == "open " + std::to_string(unlucky - 1) + " synced");
  cb.deliver(unlucky, reinterpret_cast<const uint8_t*>("z"), 1, false);
  CHECK(drain_all(q) == std::vector<std::string>{"data " + std::to_string(unlucky) + " gap 1"});
}

TEST(flow_event_queue_stress_producer_consumer_with_wakeups) {
  // The producer delivers numbered bytes on many flows; the consumer only drains when woken (a
  // condition flag the wake-up sets), like the JS thread. Every byte arrives, in order per flow,
  // with gaps exactly where drops happened, and no event is left waiting at the end.
  const uint64_t flows = 16;
  const uint64_t rounds = 20000 * pd3test::stress_scale();
  std::atomic<bool> woken{false};
  FlowEventQueue q(1u << 18, [&] { woken.store(true, std::memory_order_release); });  // release: see the consumer
  pd3::FlowCallbacks cb = q.callbacks();
  std::atomic<bool> done{false};
  std::vector<uint64_t> next(flows, 0);  // consumer: the next byte counter expected per flow
  uint64_t received = 0, gaps_seen = 0;
  std::thread consumer([&] {
    for (;;) {
      // acquire: pairs with the wake-up's release (and with done's).
      const bool finished = done.load(std::memory_order_acquire);
      if (!woken.exchange(false, std::memory_order_acquire) && !finished) {
        std::this_thread::yield();
        continue;
      }
      q.rearm();
      q.drain(1u << 20, [&](const FlowEvent& e) {
        if (e.kind != FlowEvent::Kind::kData) return;
        uint64_t first;
        std::memcpy(&first, e.data, 8);
        if (e.flag) {
          ++gaps_seen;
          CHECK(first >= next[e.flow_id]);
        } else {
          CHECK_EQ(first, next[e.flow_id]);
        }
        next[e.flow_id] = first + e.len / 8;
        received += e.len / 8;
      });
      if (finished) break;
    }
  });
  std::vector<uint64_t> sent(flows, 0);
  std::vector<uint64_t> words(64);
  for (uint64_t r = 0; r < rounds; ++r) {
    const uint64_t f = r % flows;
    const uint64_t n = 1 + r % 64;
    for (uint64_t i = 0; i < n; ++i) words[i] = sent[f] + i;
    const uint64_t dropped = q.stats().dropped_bytes;
    cb.deliver(f, reinterpret_cast<const uint8_t*>(words.data()), n * 8, false);
    sent[f] += n;
    // A full queue: give the consumer a moment, as a capture ring would refill meanwhile.
    if (q.stats().dropped_bytes != dropped) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  done.store(true, std::memory_order_release);  // release: the consumer's final drain sees everything
  consumer.join();
  const pd3::FlowEventStats s = q.stats();
  uint64_t total = 0;
  for (uint64_t f = 0; f < flows; ++f) total += sent[f];
  CHECK_EQ(received + s.dropped_bytes / 8, total);
  CHECK_EQ(s.bytes / 8, received);
  CHECK(s.dropped_bytes == 0 || gaps_seen > 0);
  CHECK(s.wakeups > 1);
  CHECK(received > 0);
  std::printf("    %llu words, %llu dropped, %llu gaps, %llu wake-ups\n", (unsigned long long)total,
              (unsigned long long)(s.dropped_bytes / 8), (unsigned long long)gaps_seen, (unsigned long long)s.wakeups);
}
