// engine_members.hpp — the pool-membership changes TransferEngine::set_member queues, from any
// thread, for the engine thread to apply (Engine::apply_members). Internal to native/dpu.
#pragma once

#include <atomic>
#include <mutex>
#include <vector>

#include "common/net.hpp"

namespace pd3 {

// The thread-safe inbox of membership changes: any thread posts, the engine thread takes.
class MemberInbox {
 public:
  // One membership change, from set_member (any thread) to the engine thread.
  struct Command {
    Endpoint endpoint;
    bool member;
  };

  // Queues one change (any thread): PD3_OK, or PD3_E_INVAL (no host or port; pd3_last_error says so).
  [[nodiscard]] int post(const Endpoint& endpoint, bool member);
  // Whether a change may be waiting: the engine thread looks every pass of its loop.
  bool waiting() const {
    // relaxed: a hint, the queue is read under mu_ (see post()).
    return waiting_.load(std::memory_order_relaxed);
  }
  // Every change queued so far, oldest first (engine thread).
  std::vector<Command> take();

 private:
  std::mutex mu_;  // guards commands_
  std::vector<Command> commands_;
  std::atomic<bool> waiting_{false};  // commands_ may be non-empty: a hint for the loop
};

}  // namespace pd3
