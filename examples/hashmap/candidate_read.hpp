// candidate_read.hpp — one remote lookup of a key: its candidate slots (control-byte matches, in
// probe order) grouped into runs of nearby slots, each run read in one request, then searched for
// the key. Remembers each candidate's slot write count at issue, so a read made without the key's
// lock can be checked for writes since (Stripes).
#pragma once

#include <cstdint>
#include <vector>

#include "host_channel.hpp"
#include "slot_layout.hpp"
#include "stripes.hpp"

namespace pd3::hashmap {

// Where a key was found in remote memory.
struct Found {
  bool present = false;
  uint64_t slot = 0;
  uint64_t value = 0;
};

// The reads of one key's candidate slots.
class CandidateRead {
 public:
  // Plans runs over `candidates` (non-empty, probe order) and notes their write counts.
  void plan(uint64_t key, const std::vector<uint64_t>& candidates, const Stripes& stripes);

  // Issues every run on `channel`, counted on ticket(). PD3_OK or the issue failure.
  int issue(HostChannel& channel);

  // After ticket() is done with PD3_OK: the key's slot among the candidates, if any.
  Found find() const;

  // True if this read is of exactly `candidates` and none of them was written since it was issued.
  bool still_valid(const std::vector<uint64_t>& candidates, const Stripes& stripes) const;

  uint64_t key() const { return key_; }
  ReadTicket& ticket() { return ticket_; }
  const ReadTicket& ticket() const { return ticket_; }

 private:
  // Slots first .. first+count-1, read into bytes_[at ..].
  struct Run {
    uint64_t first;
    uint32_t count;
    size_t at;
  };

  uint64_t key_ = 0;
  std::vector<uint64_t> candidates_;
  std::vector<uint64_t> writes_;  // Stripes::writes of each candidate at plan time
  std::vector<Run> runs_;
  std::vector<uint8_t> bytes_;
  ReadTicket ticket_;
};

}  // namespace pd3::hashmap
