// report.hpp — the run's result: a human summary on stderr and one JSON object on stdout.
#pragma once

#include <string>

#include "options.hpp"
#include "run_stats.hpp"

namespace pd3::loadgen {

// What the report says beside the counters.
struct ReportContext {
  const Options* options = nullptr;
  ycsb::Distribution distribution = ycsb::Distribution::kDefault;  // resolved
  int pinned_cpu = -1;                                             // -1: not pinned
  bool ran = false;                                                // the measured run took place
};

void print_summary(const ReportContext& ctx, const RunStats& s);
void print_json(const ReportContext& ctx, const RunStats& s);

}  // namespace pd3::loadgen
