// io_thread.cpp — hand-over queue, issue, poll, wake.
#include "io_thread.hpp"

#include <algorithm>

namespace pd3::hashmap {

namespace {

// While reads are in flight and nothing completed, block this long in pd3_host_wait (which
// returns at once when a direct-mode socket has data).
constexpr uint32_t kIdleWaitUs = 20;

bool complete(const IoThread::Batch& b) {
  return std::all_of(b.reads.begin(), b.reads.end(), [](const CandidateRead* r) { return r->ticket().done(); });
}

}  // namespace

IoThread::IoThread(pd3_host* host, const SlotLayout& layout, Stripes& stripes, Stats& stats)
    : channel_(host, layout, stripes, stats), thread_([this] { loop(); }) {}

IoThread::~IoThread() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void IoThread::run(Batch* batch) {
  {
    std::lock_guard<std::mutex> g(mu_);
    queue_.push_back(batch);
  }
  wake_.notify_one();
  for (;;) {
    // acquire (both): pairs with the releases in finish(): the reads' bytes and tickets are
    // visible once `done` is seen. The generation is read first, so a finish() after the check
    // changes it and the wait returns.
    const uint32_t generation = completions_.load(std::memory_order_acquire);
    if (batch->done.load(std::memory_order_acquire) != 0) return;
    completions_.wait(generation, std::memory_order_acquire);
  }
}

void IoThread::finish(Batch* b) {
  b->done.store(1, std::memory_order_release);  // release: the worker reads the data after seeing it
  completions_.fetch_add(1, std::memory_order_release);  // release: orders the store above before the wake
  completions_.notify_all();
}

void IoThread::issue(const std::vector<Batch*>& fresh) {
  for (Batch* b : fresh) {
    // An issue failure is recorded in that read's ticket; the worker sees it as a failed lookup.
    for (CandidateRead* r : b->reads) r->issue(channel_);
  }
}

void IoThread::loop() {
  std::vector<Batch*> active, fresh;
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      if (active.empty()) wake_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_ && queue_.empty() && active.empty()) return;
      fresh.swap(queue_);
    }
    issue(fresh);
    active.insert(active.end(), fresh.begin(), fresh.end());
    fresh.clear();
    const int polled = channel_.poll();
    const auto finished = std::stable_partition(active.begin(), active.end(), [](Batch* b) { return !complete(*b); });
    for (auto it = finished; it != active.end(); ++it) finish(*it);
    const bool progress = finished != active.end();
    active.erase(finished, active.end());
    if (polled < 0) {
      // The response ring is broken: nothing in flight will complete. Fail what is waiting.
      for (Batch* b : active) {
        for (CandidateRead* r : b->reads) {
          if (!r->ticket().done()) r->ticket() = ReadTicket{0, polled};
        }
        finish(b);
      }
      active.clear();
    } else if (!progress && polled == 0 && !active.empty()) {
      channel_.wait_any(kIdleWaitUs);
    }
  }
}

}  // namespace pd3::hashmap
