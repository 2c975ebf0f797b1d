// mrrc_bound.hpp — a lower bound on the registration cost any cache of a given size can reach on a
// trace whose requests are independent draws (the HTTPD-like trace: whole files, drawn Zipf), for
// `bench mrrc`. It answers whether a cost target is out of reach at that size for every policy,
// not only for the ones replayed.
//
// The argument. On such a trace, whatever a cache holds at a moment, the expected cost of the next
// request is that of the objects it does not hold, weighted by their probabilities; so no policy
// does better, request by request, than the set of objects that minimises that sum within the
// capacity: a knapsack. Its fractional relaxation (objects by saving per page, the last one cut)
// saves at least as much as the best whole set. The bound charges the kept set one registration
// each and every other request a registration plus the per-page part of a deregistration (as if
// every deregistration rode in a free batch), with the trace's own request counts standing for the
// probabilities: it favours the caches it bounds everywhere but in one place, the deregistration of
// what a cache still holds when the trace ends (the replays do not charge it), at most the capacity's
// pages at the per-page rate: some hundreds of microseconds in seconds.
#pragma once

#include <cstdint>
#include <vector>

#include "mrrc/cost_model.hpp"
#include "mrrc/trace_file.hpp"

namespace pd3::bench {

// The bound for one trace and one capacity.
struct CostBound {
  bool applies = false;  // false: two distinct requested ranges overlap (the objects are not independent)
  double cost_us = 0;    // the least cost any cache of the capacity can expect on the trace
};

// The bound for `trace` under `model` with a cache of `capacity_pages` pages of `page` bytes.
// Requests larger than the cache are left out, as the replays leave them out.
CostBound registration_cost_bound(const std::vector<mrrc::TraceRequest>& trace, uint64_t capacity_pages,
                                  uint64_t page, const mrrc::CostModel& model);

}  // namespace pd3::bench
