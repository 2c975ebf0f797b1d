// server.cpp — start-up order, per-mode wiring of the workers, stats, shutdown.
#include "server.hpp"

#include "async_miss_path.hpp"
#include "workload_error.hpp"
#include "leap_miss_path.hpp"
#include "remote_setup.hpp"
#include "zone_miss_path.hpp"
#include "pd3/transport.h"

namespace pd3::hashmap {

namespace {

// Ring sizes: enough for every worker's misses and write-backs in flight at once.
constexpr uint64_t kRequestRingBytes = 4u << 20;
constexpr uint64_t kResponseRingBytes = 8u << 20;
constexpr uint32_t kAllocateTimeoutMs = 10000;
constexpr uint32_t kReleaseTimeoutMs = 2000;
constexpr uint32_t kMaxRegions = PD3_REGION_LOCAL_MAX;  // local region ids per memory server

std::string status_text(int rc) { return std::string(pd3_status_name(rc)) + " (" + pd3_last_error() + ")"; }

}  // namespace

Server::~Server() {
  workers_.clear();
  io_.reset();
  give_back_regions();
  if (owner_ != nullptr) pd3_host_close(owner_);
}

void Server::give_back_regions() {
  if (!layout_ || regions_released_) return;
  regions_released_ = true;
  if (const int rc = release_regions(owner_, layout_->regions(), kReleaseTimeoutMs); rc != PD3_OK) {
    Log::write(LogLevel::kWarn,
               JsonLine(LogLevel::kWarn, "release.failed", "could not give every region back: " + status_text(rc)));
  }
}

int Server::fail(int rc, const std::string& why) {
  Log::write(LogLevel::kError, JsonLine(LogLevel::kError, "start.failed", why).field("mode", mode_name(o_.mode)));
  return rc;
}

int Server::create_segment() {
  pd3_host_config cfg{};
  cfg.name = o_.segment.c_str();
  cfg.sizes.request_ring_bytes = kRequestRingBytes;
  cfg.sizes.response_ring_bytes = kResponseRingBytes;
  cfg.flags = (o_.replace ? PD3_HOST_REPLACE : 0u) | (o_.direct() ? PD3_HOST_DIRECT_ONLY : 0u);
  cfg.direct_servers = o_.direct() ? o_.memservers.c_str() : nullptr;
  cfg.direct_token = o_.direct() ? o_.token.c_str() : nullptr;
  if (const int rc = pd3_host_create(&cfg, &owner_); rc != PD3_OK) {
    owner_ = nullptr;
    return fail(rc, "cannot create segment " + o_.segment + ": " + status_text(rc));
  }
  return PD3_OK;
}

int Server::setup_remote() {
  if (o_.through_agent() && wait_for_agent(owner_, o_.agent_wait_ms) != PD3_OK) {
    return fail(PD3_E_AGENT_DOWN, "no agent attached to segment " + o_.segment + " within " +
                                      std::to_string(o_.agent_wait_ms) + " ms (start pd3-agent --segment " +
                                      o_.segment + ")");
  }
  const uint32_t per_region = o_.region_bytes / kSlotBytes;
  const uint64_t regions = (o_.slots + per_region - 1) / per_region;
  if (regions > kMaxRegions) {
    return fail(PD3_E_INVAL, std::to_string(o_.slots) + " slots need " + std::to_string(regions) +
                                 " regions of " + std::to_string(o_.region_bytes) + " bytes: raise --region-bytes");
  }
  std::vector<uint32_t> ids;
  if (const int rc = allocate_regions(owner_, uint32_t(regions), per_region * kSlotBytes, kAllocateTimeoutMs, &ids);
      rc != PD3_OK) {
    const std::string why = "cannot allocate remote memory: " + status_text(rc);
    release_regions(owner_, ids, kReleaseTimeoutMs);  // the ones that were allocated
    return fail(rc, why);
  }
  layout_.emplace(o_.slots, per_region, std::move(ids));
  table_ = std::make_unique<HashTable>(*layout_, o_.cache_records);
  std::string why;
  if (const int rc = bulk_load(owner_, *table_, o_.records, &why); rc != PD3_OK) return fail(rc, why);
  return PD3_OK;
}

std::unique_ptr<MissPath> Server::miss_path_for(Worker& w) {
  Stats& stats = *w.context().stats;
  switch (o_.mode) {
    case Mode::kSync:
    case Mode::kPd3NoPrefetch: return std::make_unique<ReadMissPath>(*w.channel(), table_->stripes(), stats);
    case Mode::kPd3:
      return std::make_unique<ZoneMissPath>(*w.channel(), table_->stripes(), stats, o_.zone_wait_us);
    case Mode::kAsync:
      return std::make_unique<AsyncMissPath>(*io_, table_->control(), table_->cache(), table_->stripes(), stats);
    case Mode::kLeap: {
      leap::Options lo;
      lo.history_size = o_.leap_history;
      lo.max_window = o_.leap_max_prefetch;
      lo.address_limit = o_.slots;
      std::unique_ptr<leap::Prefetcher> leap;
      if (leap::Prefetcher::create(lo, &leap) != PD3_OK) {
        fail(PD3_E_INVAL, std::string("Leap options: ") + pd3::workloads::last_error());
        return nullptr;
      }
      return std::make_unique<LeapMissPath>(*w.channel(), *table_, w.context(), std::move(leap));
    }
    case Mode::kLocal: break;
  }
  return nullptr;
}

int Server::start_workers() {
  if (o_.mode == Mode::kAsync) {
    pd3_host* h = nullptr;
    if (const int rc = HostChannel::attach(o_.segment, &h); rc != PD3_OK) {
      return fail(rc, "cannot attach the I/O thread's handle: " + status_text(rc));
    }
    stats_.push_back(std::make_unique<Stats>());
    io_ = std::make_unique<IoThread>(h, *layout_, table_->stripes(), *stats_.back());
  }
  for (uint32_t i = 0; i < o_.threads; ++i) {
    stats_.push_back(std::make_unique<Stats>());
    std::unique_ptr<HostChannel> channel;
    if (table_->remote()) {
      pd3_host* h = nullptr;
      if (const int rc = HostChannel::attach(o_.segment, &h); rc != PD3_OK) {
        return fail(rc, "cannot attach a worker's handle: " + status_text(rc));
      }
      channel = std::make_unique<HostChannel>(h, *layout_, table_->stripes(), *stats_.back());
    }
    workers_.push_back(std::make_unique<Worker>(i, *table_, std::move(channel), *stats_.back()));
    Worker& w = *workers_.back();
    if (table_->remote()) {
      std::unique_ptr<MissPath> miss = miss_path_for(w);
      if (miss == nullptr) return PD3_E_INVAL;
      w.set_miss_path(std::move(miss));
    }
  }
  for (auto& w : workers_) {
    if (w->start() != PD3_OK) return fail(PD3_E_SYS, "cannot start a worker thread (epoll/eventfd)");
  }
  return PD3_OK;
}

int Server::start() {
  std::string why;
  if (const int rc = listener_.open(o_.listen_host, o_.listen_port, &why); rc != PD3_OK) return fail(rc, why);
  if (o_.mode != Mode::kLocal) {
    if (const int rc = create_segment(); rc != PD3_OK) return rc;
  }
  // The agent needs the app's port and the segment: it can be started once this line is out.
  const std::string listen = o_.listen_host + ":" + std::to_string(listener_.port());
  JsonLine listening(LogLevel::kInfo, "listening", "bound " + listen + "; loading " + std::to_string(o_.records) + " records");
  listening.field("listen", listen).field("port", uint64_t(listener_.port())).field("mode", mode_name(o_.mode));
  if (!o_.segment.empty()) listening.field("segment", o_.segment);
  Log::write(LogLevel::kInfo, listening);

  if (o_.mode == Mode::kLocal) {
    table_ = std::make_unique<HashTable>();
    if (const int rc = local_load(*table_, o_.records, &why); rc != PD3_OK) return fail(rc, why);
  } else if (const int rc = setup_remote(); rc != PD3_OK) {
    return rc;
  }
  if (const int rc = start_workers(); rc != PD3_OK) return rc;

  JsonLine ready(LogLevel::kInfo, "ready", "serving " + listen);
  ready.field("listen", listen)
      .field("port", uint64_t(listener_.port()))
      .field("mode", mode_name(o_.mode))
      .field("records", o_.records)
      .field("slots", o_.mode == Mode::kLocal ? uint64_t(0) : o_.slots)
      .field("cacheRecords", o_.mode == Mode::kLocal ? o_.records : o_.cache_records)
      .field("threads", uint64_t(o_.threads));
  if (!o_.segment.empty()) ready.field("segment", o_.segment);
  ready.write_to(STDOUT_FILENO);
  return PD3_OK;
}

void Server::print_stats() const {
  StatsSnapshot total;
  for (const auto& s : stats_) total.accumulate(*s);
  JsonLine line(LogLevel::kInfo, "stats", "counters since start");
  line.field("mode", mode_name(o_.mode)).field("cached", table_->cache().size()).raw_fields(total.json_fields());
  line.write_to(STDOUT_FILENO);
}

void Server::run() {
  ControlHandlers handlers;
  handlers.accepted = [this](UniqueFd fd, std::string peer) {
    workers_[next_worker_++ % workers_.size()]->adopt(std::move(fd), std::move(peer));
  };
  handlers.stats = [this] { print_stats(); };
  const int sig = run_control_loop(listener_, handlers);
  Log::write(LogLevel::kInfo, JsonLine(LogLevel::kInfo, "stopping", "signal received").field("signal", uint64_t(sig)));
  for (auto& w : workers_) w->stop();
  print_stats();
  workers_.clear();  // closes their handles once their write-backs completed
  io_.reset();
  give_back_regions();
  Log::write(LogLevel::kInfo, JsonLine(LogLevel::kInfo, "stopped", "closed cleanly"));
}

}  // namespace pd3::hashmap
