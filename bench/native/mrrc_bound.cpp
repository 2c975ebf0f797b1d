// mrrc_bound.cpp — see mrrc_bound.hpp.
#include "mrrc_bound.hpp"

#include <algorithm>
#include <map>
#include <utility>

namespace pd3::bench {

namespace {

// One distinct requested range and how often the trace asks for it.
struct Object {
  uint64_t pages = 0;
  uint64_t count = 0;
  double miss_us = 0;    // what each request of it costs when it is not kept
  double keep_us = 0;    // what keeping it costs: one registration
  double saving_us = 0;  // count × miss - keep: what keeping it saves over the trace
};

}  // namespace

CostBound registration_cost_bound(const std::vector<mrrc::TraceRequest>& trace, uint64_t capacity_pages,
                                  uint64_t page, const mrrc::CostModel& model) {
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> counts;  // (first page, pages) → requests
  for (const mrrc::TraceRequest& r : trace) {
    const uint64_t first = r.addr / page, last = (r.addr + r.len - 1) / page;
    if (last - first + 1 > capacity_pages) continue;  // never registrable in the cache: the replays skip it too
    ++counts[{first, last - first + 1}];
  }
  CostBound out;
  uint64_t end = 0;  // the first page past the previous object: ranges in address order must not overlap
  std::vector<Object> objects;
  objects.reserve(counts.size());
  double all_miss_us = 0;
  for (const auto& [range, count] : counts) {
    const auto [first, pages] = range;
    if (first < end) return out;  // overlapping objects: one could serve part of another
    end = first + pages;
    Object o;
    o.pages = pages;
    o.count = count;
    o.miss_us = model.total_us(1, pages, 0, pages);  // registered, then unpinned page by page in a free batch
    o.keep_us = model.total_us(1, pages, 0, 0);
    o.saving_us = double(count) * o.miss_us - o.keep_us;
    all_miss_us += double(count) * o.miss_us;
    objects.push_back(o);
  }
  // Most saving per page first; an object that saves nothing (asked once) is never worth keeping.
  std::sort(objects.begin(), objects.end(),
            [](const Object& a, const Object& b) { return a.saving_us * double(b.pages) > b.saving_us * double(a.pages); });
  double room = double(capacity_pages), saved_us = 0;
  for (const Object& o : objects) {
    if (room <= 0 || o.saving_us <= 0) break;
    const double share = std::min(1.0, room / double(o.pages));
    saved_us += share * o.saving_us;
    room -= share * double(o.pages);
  }
  out.applies = true;
  out.cost_us = all_miss_us - saved_us;
  return out;
}

}  // namespace pd3::bench
