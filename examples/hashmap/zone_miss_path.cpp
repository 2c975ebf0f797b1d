// zone_miss_path.cpp — when a Loading Zone item may be used, and where its record lives.
#include "zone_miss_path.hpp"

namespace pd3::hashmap {

int ZoneMissPath::fetch(uint64_t key, KeyHash h, const std::vector<uint64_t>& candidates, Found* found) {
  // An item carries the value, not the slot: with one candidate the slot is known (a present key
  // is always among its candidates). With several, the read below finds it.
  // A write-back of a key in this stripe still in flight may be one the agent has not taken yet,
  // so an older item of the key may still be in the zone: only after its completion (the agent
  // withdrew the key's items before forwarding it) is an item guaranteed current.
  if (candidates.size() == 1 && !stripes_.writeback_pending(h.stripe(Stripes::kKeyStripes))) {
    uint8_t key_bytes[kKeyBytes];
    uint8_t value[kValueBytes];
    store_u64(key_bytes, key);
    if (pd3_host_check_and_return(channel_.host(), key_bytes, kKeyBytes, value, kValueBytes) == kValueBytes) {
      stats_.add(&Stats::zone_hits);
      *found = {true, candidates[0], load_u64(value)};
      return PD3_OK;
    }
  }
  return ReadMissPath::fetch(key, h, candidates, found);
}

}  // namespace pd3::hashmap
