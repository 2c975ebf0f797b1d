// host_channel.hpp — one thread's handle on the host segment (pd3_host_attach in this process, so
// its completions are its own): issues slot reads and write-backs through libpd3host's C ABI and
// routes their completions. Write-backs are fire-and-forget; reads complete a ReadTicket.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "pd3/host.h"
#include "slot_layout.hpp"
#include "stats.hpp"
#include "stripes.hpp"

namespace pd3::hashmap {

// The outcome of one multi-request read: done when every request of it completed.
struct ReadTicket {
  uint32_t outstanding = 0;
  int status = PD3_OK;  // the first failure, if any
  bool done() const { return outstanding == 0; }
};

// A pd3_host handle used by one thread.
class HostChannel {
 public:
  // Takes ownership of `host` (closed by the destructor).
  HostChannel(pd3_host* host, const SlotLayout& layout, Stripes& stripes, Stats& stats);
  ~HostChannel();
  HostChannel(const HostChannel&) = delete;
  HostChannel& operator=(const HostChannel&) = delete;

  // Opens a handle on the segment for a new channel. PD3_OK or a pd3_status (reason in pd3_last_error).
  static int attach(const std::string& segment, pd3_host** out);

  pd3_host* host() const { return host_; }

  // Issues reads of `count` slots from `first` (split at region ends; not wrapping) into `dest`,
  // counted on `t`. Retries while the ring is full. PD3_OK, or the issue failure (then the reads
  // already issued still complete on `t`).
  int read_slots(uint64_t first, uint32_t count, uint8_t* dest, ReadTicket* t);

  // Writes one slot's 24 bytes (a flush: the agent drops `key_stripe`'s zone items as it takes
  // it). Counts the write in flight on the key stripe until it completes, then bumps the slot's
  // write count. Retries while the ring is full. PD3_OK or the issue failure.
  int write_slot(uint64_t slot, const uint8_t* bytes, uint32_t key_stripe);

  // Completes what has arrived. Returns completions handled, or a negative pd3_status.
  int poll();
  // Polls until `t` is done (blocking in pd3_host_wait between polls). Returns its status, or the
  // poll failure that left it unfinished (nothing will be written into its destinations then).
  int wait(const ReadTicket& t);
  // Blocks until completions may be waiting or `timeout_us` passes.
  void wait_any(uint32_t timeout_us) { pd3_host_wait(host_, timeout_us); }

  // Requests issued through this channel and not yet completed.
  uint32_t inflight() const { return pd3_host_inflight(host_); }

 private:
  // Issues one request via `issue` (returns an id or a status), polling while back-pressured.
  int issue(const std::function<int()>& issue_once);

  pd3_host* host_;
  const SlotLayout& layout_;
  Stripes& stripes_;
  Stats& stats_;
};

}  // namespace pd3::hashmap
