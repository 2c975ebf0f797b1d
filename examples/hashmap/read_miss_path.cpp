// read_miss_path.cpp — issue, wait, search.
#include "read_miss_path.hpp"

namespace pd3::hashmap {

int ReadMissPath::fetch(uint64_t key, KeyHash, const std::vector<uint64_t>& candidates, Found* found) {
  stats_.add(&Stats::remote_lookups);
  read_.plan(key, candidates, stripes_);
  int rc = read_.issue(channel_);
  // Reads already issued must finish before read_'s buffers are reused, failed or not.
  const int waited = channel_.wait(read_.ticket());
  if (rc == PD3_OK) rc = waited;
  if (rc != PD3_OK) {
    stats_.add(&Stats::remote_errors);
    return rc;
  }
  *found = read_.find();
  return PD3_OK;
}

}  // namespace pd3::hashmap
