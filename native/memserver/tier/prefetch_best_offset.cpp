// prefetch_best_offset.cpp — best-offset (prefetch_best_offset.hpp).
#include "memserver/tier/prefetch_best_offset.hpp"

#include <algorithm>

namespace pd3::tier {

const std::array<uint32_t, BestOffsetPrefetch::kOffsets>& BestOffsetPrefetch::offsets() {
  static const std::array<uint32_t, kOffsets> list = [] {
    std::array<uint32_t, kOffsets> a{};
    uint32_t n = 0;
    for (uint32_t d = 1; d <= 256; d++) {
      uint32_t r = d;
      for (uint32_t p : {2u, 3u, 5u})
        while (r % p == 0) r /= p;
      if (r == 1) a[n++] = d;
    }
    return a;
  }();
  return list;
}

uint32_t BestOffsetPrefetch::slot_of(uint64_t page) {
  return uint32_t((page ^ (page >> 8) ^ (page >> 16)) % kRecentEntries);
}

void BestOffsetPrefetch::learn(Stream* s, uint64_t page) {
  const uint32_t d = offsets()[s->test];
  if (page >= d && s->recent[slot_of(page - d)] == page - d + 1) s->score[s->test]++;
  bool end = s->score[s->test] >= kScoreMax;
  if (++s->test == kOffsets) {
    s->test = 0;
    end = end || ++s->round >= kRounds;
  }
  if (!end) return;
  const auto best = std::max_element(s->score.begin(), s->score.end());  // the first (smallest) of equals
  s->on = *best > kBadScore;
  if (s->on) s->best = offsets()[size_t(best - s->score.begin())];
  s->score.fill(0);
  s->test = 0;
  s->round = 0;
}

void BestOffsetPrefetch::on_access(const PageAccess& access, std::vector<uint64_t>* out) {
  if (!access.miss && !access.prefetched) return;
  Stream& s = streams_[access.region];
  learn(&s, access.page);
  // The paper records Y - D when the prefetch of Y = X + D completes, i.e. X; the tier does not
  // report completions, so X goes in at issue (the timeliness the delay measured is not learned).
  s.recent[slot_of(access.page)] = access.page + 1;
  if (!s.on) return;
  const uint64_t target = access.page + s.best;
  if (target > access.page && target < access.region_pages) out->push_back(target);
}

uint64_t BestOffsetPrefetch::offset(uint32_t region) const {
  const auto it = streams_.find(region);
  if (it == streams_.end() || !it->second.on) return 0;
  return it->second.best;
}

}  // namespace pd3::tier
