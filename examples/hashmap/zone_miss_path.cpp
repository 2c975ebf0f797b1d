// zone_miss_path.cpp — when a Loading Zone item may be used, and where its record lives.
#include "zone_miss_path.hpp"

#include <chrono>
#include <thread>

namespace pd3::hashmap {

bool ZoneMissPath::take_item(uint64_t key, uint64_t* value) {
  uint8_t key_bytes[kKeyBytes];
  uint8_t bytes[kValueBytes];
  store_u64(key_bytes, key);
  if (pd3_host_check_and_return(channel_.host(), key_bytes, kKeyBytes, bytes, kValueBytes) != kValueBytes) return false;
  *value = load_u64(bytes);
  return true;
}

int ZoneMissPath::fetch(uint64_t key, KeyHash h, const std::vector<uint64_t>& candidates, Found* found) {
  // An item carries the value, not the slot: with one candidate the slot is known (a present key
  // is always among its candidates). With several, the read below finds it.
  // A write-back of a key in this stripe still in flight may be one the agent has not taken yet,
  // so an older item of the key may still be in the zone: only after its completion (the agent
  // withdrew the key's items before forwarding it) is an item guaranteed current. Nothing writes
  // the key while we wait: we hold its stripe.
  if (candidates.size() == 1 && !stripes_.writeback_pending(h.stripe(Stripes::kKeyStripes))) {
    uint64_t value = 0;
    bool hit = take_item(key, &value);
    // The agent saw the request when we did, and its prefetch is likely in flight: wait for it a
    // bounded time rather than send a second read after it. Yield, not spin: another worker may
    // share this core.
    if (!hit && zone_wait_.count() > 0) {
      const auto until = std::chrono::steady_clock::now() + zone_wait_;
      while (!hit && std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
        hit = take_item(key, &value);
      }
      if (hit) stats_.add(&Stats::zone_waited_hits);
    }
    if (hit) {
      stats_.add(&Stats::zone_hits);
      *found = {true, candidates[0], value};
      return PD3_OK;
    }
  }
  return ReadMissPath::fetch(key, h, candidates, found);
}

}  // namespace pd3::hashmap
