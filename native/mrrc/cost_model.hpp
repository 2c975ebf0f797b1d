// cost_model.hpp — the registration cost model of the MRRC paper: registering p pages costs
// a·p + b, deregistering a batch of regions holding p pages in all costs a'·p + b' (one operation).
#pragma once

#include <cstdint>

namespace pd3::mrrc {

// Per-page and per-operation costs, in microseconds, of registration and deregistration.
struct CostModel {
  double reg_a_us = 0;    // registration, per page
  double reg_b_us = 0;    // registration, per operation
  double dereg_a_us = 0;  // deregistration, per page
  double dereg_b_us = 0;  // deregistration, per operation (a batch is one operation)

  // Total cost of `reg_ops` registrations over `reg_pages` pages and `dereg_ops` deregistration
  // operations over `dereg_pages` pages.
  double total_us(uint64_t reg_ops, uint64_t reg_pages, uint64_t dereg_ops, uint64_t dereg_pages) const {
    return reg_a_us * double(reg_pages) + reg_b_us * double(reg_ops) + dereg_a_us * double(dereg_pages) +
           dereg_b_us * double(dereg_ops);
  }
};

// The constants the paper quotes from Wu et al. (InfiniBand, Xeon 2.4 GHz): 0.77 us/page + 7.42 us
// per registration, 0.22 us/page + 1.1 us per deregistration.
inline constexpr CostModel kPaperCostModel{0.77, 7.42, 0.22, 1.1};

}  // namespace pd3::mrrc
