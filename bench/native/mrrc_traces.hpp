// mrrc_traces.hpp — the two synthetic registration traces of `bench mrrc`, shaped after the traces
// the MRRC paper replays (§7, Fig. 9): Cello92-like (disk I/O of a timesharing system: requests of
// 1 or 2 pages, 2-page ones about 80%) and HTTPD-like (a parallel web server reading whole files:
// 1 to 32 pages). docs/mrrc.md gives the distributions.
#pragma once

#include <cstdint>
#include <vector>

#include "mrrc/trace_file.hpp"

namespace pd3::bench {

inline constexpr uint64_t kTracePage = 4096;  // the paper's page size

// `n` requests, seeded. Addresses start at 0 and are page-aligned.
std::vector<mrrc::TraceRequest> cello_like_trace(uint64_t n, uint64_t seed);
std::vector<mrrc::TraceRequest> httpd_like_trace(uint64_t n, uint64_t seed);

// Distinct pages a trace touches (its footprint).
uint64_t footprint_pages(const std::vector<mrrc::TraceRequest>& trace);

}  // namespace pd3::bench
