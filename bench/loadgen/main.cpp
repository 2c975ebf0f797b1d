// main.cpp — pd3-loadgen: parse flags, pin, connect, load, run, report; the exit status says
// whether the run was clean (docs/loadgen.md).
#include <cstdio>
#include <string>

#include "cpu_affinity.hpp"
#include "options.hpp"
#include "report.hpp"
#include "runner.hpp"

using namespace pd3::loadgen;

int main(int argc, char** argv) {
  Options o;
  const ParseResult parsed = parse_options(argc, argv, &o);
  if (parsed.action == ParseResult::Action::kHelp) {
    std::fputs(usage_text(), stdout);
    return 0;
  }
  if (parsed.action == ParseResult::Action::kUsageError) {
    std::fprintf(stderr, "pd3-loadgen: %s\n", parsed.error.c_str());
    return 2;
  }

  ReportContext ctx;
  ctx.options = &o;
  if (o.cpu >= 0) {
    std::string why;
    if (pin_to_cpu(o.cpu, &why)) {
      ctx.pinned_cpu = o.cpu;
    } else {
      std::fprintf(stderr, "pd3-loadgen: --cpu %d: the OS refused to pin this process (%s); running unpinned\n", o.cpu,
                   why.c_str());
    }
  }

  Runner runner(o);
  std::string error;
  if (!runner.init(&error)) {
    std::fprintf(stderr, "pd3-loadgen: %s\n", error.c_str());
    return 1;
  }
  ctx.distribution = runner.distribution();

  bool ok = true;
  if (o.load) ok = runner.load();
  if (ok && (!o.operations_given || o.operations > 0)) {
    ctx.ran = true;
    ok = runner.run();
  }
  const RunStats& s = runner.stats();
  print_summary(ctx, s);
  print_json(ctx, s);

  if (!ok) {
    std::fprintf(stderr, "pd3-loadgen: run failed: %s\n", runner.failure().c_str());
    return 1;
  }
  if (s.wrong_values > 0) {
    std::fprintf(stderr, "pd3-loadgen: run failed: %llu reads returned a wrong value (first ones above)\n",
                 (unsigned long long)s.wrong_values);
    return 1;
  }
  if (s.errors() > o.max_errors) {
    std::fprintf(stderr, "pd3-loadgen: run failed: %llu errors (error replies %llu, unexpected replies %llu; --max-errors %llu)\n",
                 (unsigned long long)s.errors(), (unsigned long long)s.error_replies,
                 (unsigned long long)s.unexpected_replies, (unsigned long long)o.max_errors);
    return 1;
  }
  return 0;
}
