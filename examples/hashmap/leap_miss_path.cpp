// leap_miss_path.cpp — feeding Leap the miss slots, issuing its picks, admitting what arrived.
#include "leap_miss_path.hpp"

namespace pd3::hashmap {

LeapMissPath::LeapMissPath(HostChannel& channel, HashTable& table, WorkerContext& worker,
                           std::unique_ptr<leap::Prefetcher> leap)
    : ReadMissPath(channel, table.stripes(), *worker.stats), table_(table), worker_(worker), leap_(std::move(leap)) {}

LeapMissPath::~LeapMissPath() {
  for (Prefetch& p : inflight_) {
    if (p.busy) channel_.wait(p.ticket);
  }
}

int LeapMissPath::fetch(uint64_t key, KeyHash h, const std::vector<uint64_t>& candidates, Found* found) {
  const int rc = ReadMissPath::fetch(key, h, candidates, found);
  if (rc != PD3_OK) return rc;
  // The access stream Leap watches: the slot each miss resolved to (or first probed).
  leap_->record_miss(found->present ? found->slot : candidates[0], &picks_);
  for (const uint64_t slot : picks_) issue(slot);
  return PD3_OK;
}

void LeapMissPath::issue(uint64_t slot) {
  // Nothing to fetch from a slot without a key (the control bytes know locally).
  if (!table_.control().occupied(slot)) return;
  for (Prefetch& p : inflight_) {
    if (p.busy) continue;
    p.busy = true;
    p.slot = slot;
    // Counted before the read is issued, as CandidateRead does (admit() compares it).
    p.writes = table_.stripes().writes(slot);
    p.ticket = ReadTicket{};
    if (channel_.read_slots(slot, 1, p.bytes.data(), &p.ticket) != PD3_OK && p.ticket.done()) {
      p.busy = false;
      return;
    }
    worker_.stats->add(&Stats::prefetches_issued);
    return;
  }
  // Every prefetch buffer is in use: this pick is dropped (Leap's window is a hint).
}

void LeapMissPath::between_ops() {
  channel_.poll();
  for (Prefetch& p : inflight_) {
    if (!p.busy || !p.ticket.done()) continue;
    p.busy = false;
    if (p.ticket.status != PD3_OK) continue;
    const SlotRecord r = decode_slot(p.bytes.data());
    if (r.kind != SlotKind::kLive) continue;
    if (table_.admit(worker_, p.slot, r.key, r.value, p.writes)) worker_.stats->add(&Stats::prefetches_admitted);
  }
}

}  // namespace pd3::hashmap
