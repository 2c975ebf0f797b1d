// completions.hpp — from the response ring (and the direct path) to the issuing handles' queues.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "host/host_core.hpp"

namespace pd3 {

// Completions on their way to handle queues: consecutive ones for the same handle are queued
// under one lock (a poll usually completes a whole batch of one handle's requests). The batch
// lives in a per-thread buffer that keeps its capacity: a drain of thousands of completions would
// otherwise allocate and free tens of KiB per poll, and glibc gives such memory back to the
// kernel (madvise, a TLB flush) from a thread's arena each time.
// A sink is made under id_mu and flushed (destroyed) before id_mu is released: the handles it names
// are alive only while id_mu is held, since pd3_host_close detaches a handle's requests under it
// and then frees it. Its constructor takes the caller's guard of id_mu, so the guard is declared
// first and outlives it.
class CompletionSink {
 public:
  explicit CompletionSink(const std::lock_guard<std::mutex>& id_mu_held);
  ~CompletionSink();
  CompletionSink(const CompletionSink&) = delete;
  CompletionSink& operator=(const CompletionSink&) = delete;
  void push(pd3_host* h, const pd3_completion& c) { next(h) = c; }
  // A new completion for `h`, to be filled in place (a closed handle's, nullptr, goes nowhere).
  // Filling it where it stays, field by field, spares the drain a copy of a struct whose fields
  // were just stored one by one: the wide load of that copy cannot be forwarded from the narrow
  // stores and waits for them to reach the cache.
  pd3_completion& next(pd3_host* h) {
    if (h == nullptr) return discarded_;
    if (h != handle_) flush();
    handle_ = h;
    return batch_->emplace_back();
  }
  void flush();

 private:
  pd3_completion discarded_{};          // where completions of closed handles are written
  pd3_host* handle_ = nullptr;
  std::vector<pd3_completion> own_;     // used when this thread's buffer is taken by an outer sink
  std::vector<pd3_completion>* batch_;  // this thread's buffer, or own_
  bool borrowed_ = false;
};

// Hands a completion to the issuing handle and frees or quarantines the id. Caller holds id_mu.
void finish(HostCore& core, uint32_t id, const pd3_completion& c, bool quarantine, CompletionSink& sink);
// The part of finish after the completion was handed on (written in place through
// CompletionSink::next): ends the destination's registration, frees or quarantines the id.
void retire(HostCore& core, uint32_t id, bool quarantine);

// Everything poll and wait do before handing out completions: drain the response ring, pump the
// direct path, notice a dead agent, release quarantined ids.
void collect(HostCore& core);

}  // namespace pd3
