// engine_members.cpp — MemberInbox: set_member's queue of pool-membership changes.
#include "dpu/engine_members.hpp"

#include "common/error.hpp"
#include "pd3/status.h"

namespace pd3 {

int MemberInbox::post(const Endpoint& endpoint, bool member) {
  if (endpoint.host.empty() || endpoint.port == 0)
    return fail(PD3_E_INVAL, "pool member '%s' is not host:port", endpoint.str().c_str());
  std::lock_guard lock(mu_);
  commands_.push_back(Command{endpoint, member});
  // relaxed: the flag only tells the engine thread to look. The command itself is published by
  // mu_, which the engine thread takes before reading the queue; a flag seen late only
  // delays the command by a pass of the loop (a millisecond at most: the heartbeat).
  waiting_.store(true, std::memory_order_relaxed);
  return PD3_OK;
}

std::vector<MemberInbox::Command> MemberInbox::take() {
  std::vector<Command> commands;
  std::lock_guard lock(mu_);
  commands.swap(commands_);
  // relaxed: stored under mu_ like every store of it, so a command queued after this
  // critical section sets it again after this store.
  waiting_.store(false, std::memory_order_relaxed);
  return commands;
}

}  // namespace pd3
