// zone_miss_path.hpp — the `pd3` mode: on a local miss, first pd3_host_check_and_return(key) (the
// agent may have prefetched the record into the Loading Zone while the request waited), and only on
// a zone miss a read through the agent.
#pragma once

#include "read_miss_path.hpp"

namespace pd3::hashmap {

// checkAndReturn, then a synchronous read through the agent.
class ZoneMissPath : public ReadMissPath {
 public:
  ZoneMissPath(HostChannel& channel, const Stripes& stripes, Stats& stats)
      : ReadMissPath(channel, stripes, stats), stripes_(stripes), stats_(stats) {}

  int fetch(uint64_t key, KeyHash h, const std::vector<uint64_t>& candidates, Found* found) override;

 private:
  const Stripes& stripes_;
  Stats& stats_;
};

}  // namespace pd3::hashmap
