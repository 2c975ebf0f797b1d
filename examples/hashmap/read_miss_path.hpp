// read_miss_path.hpp — a miss waits for one remote read of the key's candidate slots on the
// worker's own handle: the `sync` mode (a PD3_HOST_DIRECT_ONLY handle: host-issued reads) and the
// `pd3-noprefetch` mode (reads through the agent's rings).
#pragma once

#include "host_channel.hpp"
#include "miss_path.hpp"
#include "stats.hpp"

namespace pd3::hashmap {

// Synchronous remote reads, one key at a time.
class ReadMissPath : public MissPath {
 public:
  ReadMissPath(HostChannel& channel, const Stripes& stripes, Stats& stats)
      : channel_(channel), stripes_(stripes), stats_(stats) {}

  int fetch(uint64_t key, KeyHash h, const std::vector<uint64_t>& candidates, Found* found) override;

 protected:
  HostChannel& channel_;

 private:
  const Stripes& stripes_;
  Stats& stats_;
  CandidateRead read_;  // reused: keeps its buffers
};

}  // namespace pd3::hashmap
