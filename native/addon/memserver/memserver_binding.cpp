// memserver_binding.cpp — MemServerHandle: a memory server (MemStore + TcpServer) for TS (thin wrapper).
#include <memory>
#include <string>

#include "common/tenant_credential.hpp"
#include "shared/addon.hpp"
#include "memserver/mem_store.hpp"
#include "memserver/record_parser.hpp"
#include "memserver/tcp_server.hpp"

namespace pd3addon {

namespace {

// Largest integer a JS number holds exactly (Number.MAX_SAFE_INTEGER).
constexpr uint64_t kMaxSafeInteger = (1ull << 53) - 1;

// Reads the properties of the options object, converting and range-checking each.
struct OptionReader {
  Napi::Env env;
  Napi::Object o;

  bool has(const char* key) const { return !o.Get(key).IsUndefined(); }
  // An integer in [0, max]; `fallback` when absent (and not `required`).
  uint64_t integer(const char* key, uint64_t max, uint64_t fallback, bool required = false) const {
    const Napi::Value v = o.Get(key);
    if (v.IsUndefined() && !required) return fallback;
    if (!v.IsNumber()) throw Napi::TypeError::New(env, std::string(key) + " must be a number");
    const double d = v.As<Napi::Number>().DoubleValue();
    if (!(d >= 0 && d <= double(max)) || d != double(uint64_t(d)))
      throw Napi::RangeError::New(env, std::string(key) + " must be an integer in [0, " + std::to_string(max) + "]");
    return uint64_t(d);
  }
  double number(const char* key, double fallback) const {
    const Napi::Value v = o.Get(key);
    if (v.IsUndefined()) return fallback;
    if (!v.IsNumber()) throw Napi::TypeError::New(env, std::string(key) + " must be a number");
    return v.As<Napi::Number>().DoubleValue();
  }
  std::string string(const char* key, bool required, const std::string& fallback = "") const {
    const Napi::Value v = o.Get(key);
    if (v.IsUndefined() && !required) return fallback;
    if (!v.IsString()) throw Napi::TypeError::New(env, std::string(key) + " must be a string");
    return v.As<Napi::String>().Utf8Value();
  }
};

// JS wrapper of one memory server; its event loop runs on its own native thread.
class MemServerHandle : public Napi::ObjectWrap<MemServerHandle> {
 public:
  static void Init(Napi::Env env, Napi::Object exports) {
    Napi::Function cls = DefineClass(
        env, "MemServerHandle",
        {InstanceMethod<&MemServerHandle::Port>("port"), InstanceMethod<&MemServerHandle::Stats>("stats"),
         InstanceMethod<&MemServerHandle::RecordParser>("recordParser"),
         InstanceMethod<&MemServerHandle::BatchHistogram>("batchHistogram"),
         InstanceMethod<&MemServerHandle::TakeLogs>("takeLogs"), InstanceMethod<&MemServerHandle::Tenants>("tenants"),
         InstanceMethod<&MemServerHandle::ReclaimTenant>("reclaimTenant"),
         InstanceMethod<&MemServerHandle::RegionHeat>("regionHeat"),
         InstanceMethod<&MemServerHandle::Close>("close")});
    exports.Set("MemServerHandle", cls);
    exports.Set("maxWarmAhead", Napi::Number::New(env, pd3::kMaxWarmAhead));
  }

  // new MemServerHandle({host, port, serverId, token, capacity?, headroom?, dataDir?, sync?,
  //                      maxFrame?, maxConnections?, indexInitialKeys?, recordParser?})
  explicit MemServerHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<MemServerHandle>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsObject()) throw Napi::TypeError::New(env, "MemServerHandle(options)");
    const OptionReader opt{env, info[0].As<Napi::Object>()};

    pd3::MemStoreOptions store_options;
    store_options.server_id = uint16_t(opt.integer("serverId", PD3_MAX_SERVERS - 1, 0, true));
    store_options.capacity = opt.integer("capacity", kMaxSafeInteger, 0);
    store_options.headroom = opt.number("headroom", store_options.headroom);
    store_options.give_back = opt.string("giveBack", false, "on") == "on";
    store_options.meminfo_path = opt.string("meminfo", false, "/proc/meminfo");
    store_options.data_dir = opt.string("dataDir", false);
    const std::string sync = opt.string("sync", false, "batch");
    if (sync != "none" && sync != "batch") throw Napi::RangeError::New(env, "sync must be 'none' or 'batch'");
    store_options.sync = sync == "none" ? pd3::SyncMode::kNone : pd3::SyncMode::kBatch;
    store_options.index_initial_keys =
        opt.integer("indexInitialKeys", kMaxSafeInteger, store_options.index_initial_keys);
    store_options.dram_budget = opt.integer("dramBudget", kMaxSafeInteger, 0);
    store_options.page_size = uint32_t(opt.integer("pageSize", 2u << 20, store_options.page_size));
    if (!pd3::tier::parse_eviction_kind(opt.string("evict", false, "lru"), &store_options.evict))
      throw Napi::RangeError::New(env, "evict must be lru, fifo, random, cflru or epoch");
    if (!pd3::tier::parse_prefetch_kind(opt.string("tierPrefetch", false, "none"), &store_options.tier_prefetch))
      throw Napi::RangeError::New(env, "tierPrefetch must be none, next-n, best-offset or leap");
    const std::string tier_io = opt.string("tierIo", false, "");
    if (!tier_io.empty() && !pd3::tier::parse_io_kind(tier_io, &store_options.tier_io))
      throw Napi::RangeError::New(env, "tierIo must be uring or threads");
    store_options.tier_io_fallback = tier_io.empty();  // only the default falls back
    if (opt.has("mrCache")) store_options.mr_cache = opt.integer("mrCache", kMaxSafeInteger, 0);
    const std::string record_parser = opt.string("recordParser", false, "builtin");
    if (const int rc = pd3::load_record_parser(record_parser, &store_options.record_parser))
      throw_status(env, rc, "recordParser");

    pd3::TcpServerOptions server_options;
    server_options.host = opt.string("host", true);
    server_options.port = uint16_t(opt.integer("port", 0xFFFF, 0, true));
    server_options.token = opt.string("token", true);
    server_options.max_frame = uint32_t(opt.integer("maxFrame", 0xFFFFFFFFull, server_options.max_frame));
    server_options.max_connections =
        uint32_t(opt.integer("maxConnections", 0xFFFFFFFFull, server_options.max_connections));
    server_options.pressure_check_ms =
        uint32_t(opt.integer("pressureCheckMs", 3600000, server_options.pressure_check_ms));
    server_options.warm_ahead = uint32_t(opt.integer("warmAhead", pd3::kMaxWarmAhead, server_options.warm_ahead));

    std::unique_ptr<pd3::MemStore> store;
    if (const int rc = pd3::MemStore::open(store_options, &store)) throw_status(env, rc, "MemStore");
    record_format_ = store->record_parser().name();
    if (const int rc = pd3::TcpServer::start(server_options, std::move(store), &server_))
      throw_status(env, rc, "TcpServer");
  }

 private:
  Napi::Value Port(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), server_->port()); }

  // recordParser(): the format the index reads: "builtin", or the plug-in parser's name.
  Napi::Value RecordParser(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), record_format_); }

  // stats(): every TcpServerStats and MemStoreStats field, snake_case as in the structs.
  Napi::Value Stats(const Napi::CallbackInfo& info) {
    const pd3::TcpServerStats s = server_->stats();
    Napi::Object o = Napi::Object::New(info.Env());
    auto set = [&](const char* name, uint64_t v) { o.Set(name, double(v)); };
    set("connections", s.connections);
    set("connections_total", s.connections_total);
    set("refused_connections", s.refused_connections);
    set("frames", s.frames);
    set("records", s.records);
    set("bytes_in", s.bytes_in);
    set("bytes_out", s.bytes_out);
    set("protocol_errors", s.protocol_errors);
    set("auth_failures", s.auth_failures);
    set("hello_timeouts", s.hello_timeouts);
    set("too_big_records", s.too_big_records);
    set("sync_failures", s.sync_failures);
    set("read_pauses", s.read_pauses);
    set("frames_behind_sync", s.frames_behind_sync);
    set("free_bytes", s.free_bytes);
    set("regions", s.store.regions);
    set("allocated_bytes", s.store.allocated_bytes);
    set("capacity", s.store.capacity);
    set("index_keys", s.store.index_keys);
    set("index_bytes", s.store.index_bytes);
    set("reads", s.store.reads);
    set("writes", s.store.writes);
    set("prefetches", s.store.prefetches);
    set("controls", s.store.controls);
    set("read_bytes", s.store.read_bytes);
    set("write_bytes", s.store.write_bytes);
    set("errors", s.store.errors);
    set("prefetch_not_found", s.store.prefetch_not_found);
    set("syncs", s.store.syncs);
    set("record_parser_rejects", s.store.record_parser_rejects);
    set("tenant_refusals", s.store.tenant_refusals);
    set("tenants_reclaimed", s.store.tenants_reclaimed);
    set("reclaimed_regions", s.store.reclaimed_regions);
    set("reclaimed_bytes", s.store.reclaimed_bytes);
    set("given_back_bytes", s.store.given_back_bytes);
    set("given_back_regions", s.store.given_back_regions);
    set("file_reads", s.store.file_reads);
    set("file_read_bytes", s.store.file_read_bytes);
    set("pressure_events", s.store.pressure_events);
    set("moved_refusals", s.store.moved_refusals);
    set("warm_hints", s.store.warm_hints);
    if (s.store.tiered) {
      const pd3::tier::TierStats& t = s.store.tier;
      set("tier_hits", t.hits);
      set("tier_misses", t.misses);
      set("tier_evictions", t.evictions);
      set("tier_writebacks", t.writebacks);
      set("tier_writeback_bytes", t.writeback_bytes);
      set("tier_fdatasyncs", t.fdatasyncs);
      set("tier_overwrites", t.overwrites);
      set("tier_prefetches", t.prefetches);
      set("tier_useless_prefetches", t.useless_prefetches);
      set("tier_io_errors", t.io_errors);
      set("tier_resident_pages", t.resident_pages);
      set("tier_dirty_pages", t.dirty_pages);
      set("tier_frames", t.frames);
      set("tier_mr_hits", t.mr_hits);
      set("tier_mr_misses", t.mr_misses);
      set("tier_mr_failures", t.mr_failures);
      set("tier_mr_pinned_bytes", t.mr_pinned_bytes);
    }
    return o;
  }

  // tenants(): [{tenant, regions, bytes}] for every tenant holding a region.
  Napi::Value Tenants(const Napi::CallbackInfo& info) {
    const std::vector<pd3::TenantUsage> usage = server_->tenants();
    Napi::Array out = Napi::Array::New(info.Env(), usage.size());
    for (uint32_t i = 0; i < usage.size(); ++i) {
      Napi::Object o = Napi::Object::New(info.Env());
      o.Set("tenant", usage[i].tenant);
      o.Set("regions", double(usage[i].regions));
      o.Set("bytes", double(usage[i].bytes));
      out.Set(i, o);
    }
    return out;
  }

  // regionHeat(): [{region, capacity, tenant, accesses, move}] for every region; move is
  // "none", "frozen" or "sealed".
  Napi::Value RegionHeat(const Napi::CallbackInfo& info) {
    const std::vector<pd3::RegionHeat> heat = server_->region_heat();
    Napi::Array out = Napi::Array::New(info.Env(), heat.size());
    for (uint32_t i = 0; i < heat.size(); ++i) {
      Napi::Object o = Napi::Object::New(info.Env());
      o.Set("region", double(heat[i].id));
      o.Set("capacity", double(heat[i].capacity));
      o.Set("tenant", heat[i].tenant);
      o.Set("accesses", double(heat[i].accesses));
      const pd3::MoveState m = heat[i].move;
      o.Set("move", m == pd3::MoveState::kNone ? "none" : m == pd3::MoveState::kFrozen ? "frozen" : "sealed");
      out.Set(i, o);
    }
    return out;
  }

  // reclaimTenant(name): asks the server's thread to free every region of the tenant.
  Napi::Value ReclaimTenant(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(env, "reclaimTenant(tenant: string)");
    const std::string tenant = info[0].As<Napi::String>().Utf8Value();
    if (!pd3::valid_tenant_name(tenant)) throw Napi::RangeError::New(env, "not a tenant name: " + tenant);
    server_->reclaim_tenant(tenant);
    return env.Undefined();
  }

  Napi::Value BatchHistogram(const Napi::CallbackInfo& info) {
    const pd3::BatchHistogram h = server_->batch_histogram();
    Napi::Array out = Napi::Array::New(info.Env(), h.size());
    for (uint32_t i = 0; i < h.size(); ++i) out.Set(i, double(h[i]));
    return out;
  }

  // takeLogs(): {events: [{level, event, message}], dropped}
  Napi::Value TakeLogs(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    uint64_t dropped = 0;
    const std::vector<pd3::LogEvent> events = server_->log().take(&dropped);
    return log_events(env, events, dropped);
  }

  // close(): stops the server and releases its store; stats, histogram and logs stay readable.
  Napi::Value Close(const Napi::CallbackInfo& info) {
    server_->stop();
    return info.Env().Undefined();
  }

  std::unique_ptr<pd3::TcpServer> server_;
  std::string record_format_;  // RecordParser::name() of the store, kept for after it moved to the server
};

}  // namespace

void init_memserver(Napi::Env env, Napi::Object exports) { MemServerHandle::Init(env, exports); }

}  // namespace pd3addon
