// candidate_read.cpp — grouping candidates into runs and searching the bytes read.
#include "candidate_read.hpp"

namespace pd3::hashmap {

namespace {

// Candidates this close share one request: reading a few slots between them costs less than
// another round trip.
constexpr uint64_t kMaxGap = 8;

}  // namespace

void CandidateRead::plan(uint64_t key, const std::vector<uint64_t>& candidates, const Stripes& stripes) {
  key_ = key;
  candidates_ = candidates;
  writes_.clear();
  runs_.clear();
  ticket_ = ReadTicket{};
  size_t bytes = 0;
  for (const uint64_t c : candidates) {
    // Counted before the read is issued: a write issued after this may or may not be seen by the
    // read, and still_valid() then refuses it.
    writes_.push_back(stripes.writes(c));
    // A probe sequence that wraps past the table's end starts a new run at slot 0.
    if (!runs_.empty() && c > runs_.back().first && c - runs_.back().first < runs_.back().count + kMaxGap) {
      const uint32_t count = uint32_t(c - runs_.back().first + 1);
      bytes += size_t(count - runs_.back().count) * kSlotBytes;
      runs_.back().count = count;
      continue;
    }
    runs_.push_back({c, 1, bytes});
    bytes += kSlotBytes;
  }
  bytes_.assign(bytes, 0);
}

int CandidateRead::issue(HostChannel& channel) {
  for (const Run& r : runs_) {
    if (const int rc = channel.read_slots(r.first, r.count, bytes_.data() + r.at, &ticket_); rc != PD3_OK) return rc;
  }
  return PD3_OK;
}

Found CandidateRead::find() const {
  // Only candidates count: a slot whose control byte is another key's may still hold bytes of a
  // record the table has since replaced.
  size_t run = 0;
  for (const uint64_t c : candidates_) {
    while (c < runs_[run].first || c >= runs_[run].first + runs_[run].count) ++run;
    const SlotRecord rec = decode_slot(bytes_.data() + runs_[run].at + size_t(c - runs_[run].first) * kSlotBytes);
    if (rec.kind == SlotKind::kLive && rec.key == key_) return {true, c, rec.value};
  }
  return {};
}

bool CandidateRead::still_valid(const std::vector<uint64_t>& candidates, const Stripes& stripes) const {
  if (candidates != candidates_) return false;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    if (stripes.writes(candidates_[i]) != writes_[i]) return false;
  }
  return true;
}

}  // namespace pd3::hashmap
