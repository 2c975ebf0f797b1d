// host_channel.cpp — issuing through the C ABI with back-pressure, and completion routing.
// user_data: a read carries its ReadTicket's address (even), a write (key_stripe << 1) | 1.
#include "host_channel.hpp"

#include <time.h>

namespace pd3::hashmap {

namespace {

constexpr uint32_t kPollBatch = 256;
constexpr long kCloseWaitSeconds = 5;

bool back_pressure(int rc) { return rc == PD3_E_AGAIN || rc == PD3_E_INFLIGHT; }

}  // namespace

HostChannel::HostChannel(pd3_host* host, const SlotLayout& layout, Stripes& stripes, Stats& stats)
    : host_(host), layout_(layout), stripes_(stripes), stats_(stats) {}

HostChannel::~HostChannel() {
  // Let write-backs still in flight complete (bounded: closing drops whatever is left).
  timespec start{}, now{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (inflight() > 0 && poll() >= 0) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec >= kCloseWaitSeconds) break;
    wait_any(1000);
  }
  pd3_host_close(host_);
}

int HostChannel::attach(const std::string& segment, pd3_host** out) { return pd3_host_attach(segment.c_str(), out); }

int HostChannel::issue(const std::function<int()>& issue_once) {
  for (;;) {
    const int rc = issue_once();
    if (!back_pressure(rc)) return rc < 0 ? rc : PD3_OK;
    // The ring or the id table is full: completions (ours, and the agent's progress) make room.
    const int n = poll();
    if (n < 0) return n;
    if (n == 0) wait_any(50);
  }
}

int HostChannel::read_slots(uint64_t first, uint32_t count, uint8_t* dest, ReadTicket* t) {
  while (count > 0) {
    const uint32_t n = layout_.contiguous(first, count);
    const SlotAddress a = layout_.address(first);
    ++t->outstanding;
    const int rc = issue([&] {
      return pd3_host_read(host_, a.region, a.offset, n * kSlotBytes, dest, uint64_t(reinterpret_cast<uintptr_t>(t)));
    });
    if (rc != PD3_OK) {
      --t->outstanding;
      if (t->status == PD3_OK) t->status = rc;
      return rc;
    }
    stats_.add(&Stats::reads);
    first += n;
    count -= n;
    dest += size_t(n) * kSlotBytes;
  }
  return PD3_OK;
}

int HostChannel::write_slot(uint64_t slot, const uint8_t* bytes, uint32_t key_stripe) {
  const SlotAddress a = layout_.address(slot);
  stripes_.writeback_issued(key_stripe);
  const int rc = issue([&] {
    return pd3_host_write(host_, a.region, a.offset, bytes, kSlotBytes, (uint64_t(key_stripe) << 1) | 1u);
  });
  if (rc != PD3_OK) {
    stripes_.writeback_done(key_stripe);
    stats_.add(&Stats::write_errors);
    return rc;
  }
  stripes_.wrote(slot);
  stats_.add(&Stats::writebacks);
  return PD3_OK;
}

int HostChannel::poll() {
  pd3_completion done[kPollBatch];
  const int n = pd3_host_poll(host_, done, kPollBatch);
  if (n < 0) return n;
  for (int i = 0; i < n; ++i) {
    const pd3_completion& c = done[i];
    if (c.user_data & 1u) {
      stripes_.writeback_done(uint32_t(c.user_data >> 1));
      if (c.status != PD3_OK) stats_.add(&Stats::write_errors);
      continue;
    }
    auto* t = reinterpret_cast<ReadTicket*>(uintptr_t(c.user_data));
    if (c.status != PD3_OK && t->status == PD3_OK) t->status = c.status;
    --t->outstanding;
  }
  return n;
}

int HostChannel::wait(const ReadTicket& t) {
  while (!t.done()) {
    const int n = poll();
    // A broken response ring (PD3_E_CORRUPT) completes nothing more, and writes no destination.
    if (n < 0) return n;
    if (n == 0) wait_any(100);
  }
  return t.status;
}

}  // namespace pd3::hashmap
