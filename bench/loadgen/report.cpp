// report.cpp — formatting of the summary and the JSON line.
#include "report.hpp"

#include <cstdio>
#include <string>

namespace pd3::loadgen {

namespace {

// The derived figures both outputs print.
struct Figures {
  double p50_us, p99_us, p999_us, max_us, mean_us, kops, cpu_us_per_op;
};

Figures figures_of(const RunStats& s) {
  const auto snap = s.latency.snapshot();
  Figures f{};
  f.p50_us = double(snap.quantile(0.5)) / 1e3;
  f.p99_us = double(snap.quantile(0.99)) / 1e3;
  f.p999_us = double(snap.quantile(0.999)) / 1e3;
  f.max_us = double(s.latency.max_ns()) / 1e3;
  f.mean_us = s.latency.mean_ns() / 1e3;
  f.kops = s.seconds > 0 ? double(s.ops) / s.seconds / 1e3 : 0;
  f.cpu_us_per_op = s.ops > 0 ? (s.cpu_user_s + s.cpu_sys_s) * 1e6 / double(s.ops) : 0;
  return f;
}

// µs below 1 ms, ms above.
std::string duration_text(double us) {
  char b[32];
  if (us < 1000) std::snprintf(b, sizeof b, "%.0f us", us);
  else std::snprintf(b, sizeof b, "%.2f ms", us / 1000);
  return b;
}

}  // namespace

void print_summary(const ReportContext& ctx, const RunStats& s) {
  const Options& o = *ctx.options;
  const Figures f = figures_of(s);
  if (o.load) {
    std::fprintf(stderr, "pd3-loadgen: loaded %llu records in %.2f s\n", (unsigned long long)s.loaded, s.load_seconds);
  }
  if (!ctx.ran) return;
  char loop[64];
  if (o.rate > 0) std::snprintf(loop, sizeof loop, "open loop at %.0f ops/s", o.rate);
  else std::snprintf(loop, sizeof loop, "closed loop");
  std::fprintf(stderr, "pd3-loadgen: %s %s:%u, workload %c (%s), %u connections x %u pipeline, %s\n",
               protocol_name(o.protocol), o.host.c_str(), o.port, o.workload, distribution_name(ctx.distribution),
               o.connections, o.pipeline, loop);
  std::fprintf(stderr, "pd3-loadgen: %llu ops in %.2f s = %.1f kops/s; latency p50 %s, p99 %s, p99.9 %s, max %s\n",
               (unsigned long long)s.ops, s.seconds, f.kops, duration_text(f.p50_us).c_str(),
               duration_text(f.p99_us).c_str(), duration_text(f.p999_us).c_str(), duration_text(f.max_us).c_str());
  std::string extra;
  if (s.lost_requests > 0) extra += ", " + std::to_string(s.lost_requests) + " requests lost with their connection";
  if (o.verify) extra += ", " + std::to_string(s.verified_reads) + " reads verified";
  std::fprintf(stderr,
               "pd3-loadgen: errors %llu (error replies %llu, unexpected %llu, connections %llu), wrong values %llu, "
               "not found %llu%s\n",
               (unsigned long long)s.errors(), (unsigned long long)s.error_replies,
               (unsigned long long)s.unexpected_replies, (unsigned long long)s.connection_errors,
               (unsigned long long)s.wrong_values, (unsigned long long)s.not_found, extra.c_str());
  std::fprintf(stderr, "pd3-loadgen: CPU %.3f s user + %.3f s sys = %.2f us/op\n", s.cpu_user_s, s.cpu_sys_s,
               f.cpu_us_per_op);
  if (s.backlog > 0) {
    std::fprintf(stderr,
                 "pd3-loadgen: the server fell behind the schedule: %llu scheduled operations were never sent "
                 "(the percentiles cover those sent)\n",
                 (unsigned long long)s.backlog);
  }
}

void print_json(const ReportContext& ctx, const RunStats& s) {
  const Options& o = *ctx.options;
  const Figures f = figures_of(s);
  char rate[32] = "null";
  if (o.rate > 0) std::snprintf(rate, sizeof rate, "%.3f", o.rate);
  char cpu[16] = "null";
  if (ctx.pinned_cpu >= 0) std::snprintf(cpu, sizeof cpu, "%d", ctx.pinned_cpu);
  std::printf(
      "{\"ops\":%llu,\"seconds\":%.6f,\"kops\":%.3f,\"p50_us\":%.2f,\"p99_us\":%.2f,\"p999_us\":%.2f,"
      "\"max_us\":%.2f,\"mean_us\":%.2f,\"errors\":%llu,\"error_replies\":%llu,\"unexpected_replies\":%llu,"
      "\"connection_errors\":%llu,\"lost_requests\":%llu,\"wrong_values\":%llu,\"verified_reads\":%llu,"
      "\"not_found\":%llu,\"requests\":%llu,\"backlog\":%llu,\"connections\":%u,\"pipeline\":%u,"
      "\"protocol\":\"%s\",\"workload\":\"%c\",\"distribution\":\"%s\",\"records\":%llu,\"value_size\":%u,"
      "\"rate\":%s,\"verify\":%s,\"loaded\":%llu,\"load_seconds\":%.3f,\"cpu_user_s\":%.6f,\"cpu_sys_s\":%.6f,"
      "\"cpu_us_per_op\":%.4f,\"pinned_cpu\":%s}\n",
      (unsigned long long)s.ops, s.seconds, f.kops, f.p50_us, f.p99_us, f.p999_us, f.max_us, f.mean_us,
      (unsigned long long)s.errors(), (unsigned long long)s.error_replies, (unsigned long long)s.unexpected_replies,
      (unsigned long long)s.connection_errors, (unsigned long long)s.lost_requests, (unsigned long long)s.wrong_values,
      (unsigned long long)s.verified_reads, (unsigned long long)s.not_found, (unsigned long long)s.requests,
      (unsigned long long)s.backlog, o.connections, o.pipeline, protocol_name(o.protocol), o.workload,
      distribution_name(ctx.distribution), (unsigned long long)o.records, o.value_size, rate,
      o.verify ? "true" : "false", (unsigned long long)s.loaded, s.load_seconds, s.cpu_user_s, s.cpu_sys_s,
      f.cpu_us_per_op, cpu);
  std::fflush(stdout);
}

}  // namespace pd3::loadgen
