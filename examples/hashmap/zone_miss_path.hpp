// zone_miss_path.hpp — the `pd3` mode: on a local miss, first pd3_host_check_and_return(key) (the
// agent may have prefetched the record into the Loading Zone while the request waited), then, for
// a bounded time, again as the prefetch may be in flight, and only then a read through the agent.
#pragma once

#include <chrono>

#include "read_miss_path.hpp"

namespace pd3::hashmap {

// checkAndReturn (waiting up to zone_wait_us for the item), then a synchronous read through the agent.
class ZoneMissPath : public ReadMissPath {
 public:
  ZoneMissPath(HostChannel& channel, const Stripes& stripes, Stats& stats, uint32_t zone_wait_us)
      : ReadMissPath(channel, stripes, stats), stripes_(stripes), stats_(stats), zone_wait_(zone_wait_us) {}

  int fetch(uint64_t key, KeyHash h, const std::vector<uint64_t>& candidates, Found* found) override;

 private:
  // The item's value, if the zone has it now.
  bool take_item(uint64_t key, uint64_t* value);

  const Stripes& stripes_;
  Stats& stats_;
  const std::chrono::microseconds zone_wait_;
};

}  // namespace pd3::hashmap
