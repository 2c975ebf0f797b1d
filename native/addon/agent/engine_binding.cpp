// engine_binding.cpp — EngineHandle: a running Transfer Engine for TS (thin wrapper of
// pd3::TransferEngine; the JS surface is NativeEngine in host/native.ts).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "shared/addon.hpp"
#include "js_parser_bridge.hpp"
#include "pd3/status.h"
#include "common/net.hpp"
#include "dpu/dpdk_mirror.hpp"
#include "dpu/packet_mirror.hpp"
#include "dpu/transfer_engine.hpp"

namespace pd3addon {

namespace {

// new EngineHandle(options: NativeEngineOptions). The constructor blocks until every memory
// server was tried once (at most connectTimeoutMs).
class EngineHandle : public Napi::ObjectWrap<EngineHandle> {
 public:
  static void Init(Napi::Env env, Napi::Object exports) {
    Napi::Function cls = DefineClass(
        env, "EngineHandle",
        {InstanceMethod<&EngineHandle::Stats>("stats"), InstanceMethod<&EngineHandle::Servers>("servers"),
         InstanceMethod<&EngineHandle::TakeLogs>("takeLogs"), InstanceMethod<&EngineHandle::TeePort>("teePort"),
         InstanceMethod<&EngineHandle::AttachParser>("attachParser"),
         InstanceMethod<&EngineHandle::PumpFlows>("pumpFlows"), InstanceMethod<&EngineHandle::SetMember>("setMember"),
         InstanceMethod<&EngineHandle::Close>("close")});
    exports.Set("EngineHandle", cls);
    // dpdkBuiltIn: whether this build has the DPDK capture backend (--mirror dpdk).
    exports.Set("dpdkBuiltIn", Napi::Boolean::New(env, pd3::dpdk_mirror_built_in()));
  }

  explicit EngineHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<EngineHandle>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsObject()) throw Napi::TypeError::New(env, "EngineHandle(options)");
    Napi::Object o = info[0].As<Napi::Object>();
    auto text = [&](const char* k) {
      if (!o.Get(k).IsString()) throw Napi::TypeError::New(env, std::string(k) + " must be a string");
      return o.Get(k).As<Napi::String>().Utf8Value();
    };
    auto num = [&](const char* k, uint64_t dflt, uint64_t max) {
      Napi::Value v = o.Get(k);
      if (v.IsUndefined()) return dflt;
      if (!v.IsNumber()) throw Napi::TypeError::New(env, std::string(k) + " must be a number");
      const double d = v.As<Napi::Number>().DoubleValue();
      if (!(d >= 0 && d <= double(max)) || d != double(uint64_t(d)))
        throw Napi::RangeError::New(env, std::string(k) + " must be an integer in [0, " + std::to_string(max) + "]");
      return uint64_t(d);
    };
    pd3::EngineOptions opt;
    opt.segment = text("segment");
    opt.token = text("token");
    if (!o.Get("tenant").IsUndefined()) opt.tenant = text("tenant");
    if (!o.Get("servers").IsArray()) throw Napi::TypeError::New(env, "servers must be an array of \"host:port\"");
    Napi::Array servers = o.Get("servers").As<Napi::Array>();
    for (uint32_t i = 0; i < servers.Length(); ++i) {
      pd3::Endpoint ep;
      Napi::Value s = servers.Get(i);
      if (!s.IsString() || !pd3::parse_endpoint(s.As<Napi::String>().Utf8Value(), &ep))
        throw Napi::TypeError::New(env, "servers[" + std::to_string(i) + "] must be \"host:port\"");
      opt.servers.push_back(ep);
    }
    constexpr uint64_t kU32 = 0xFFFFFFFFull;
    opt.max_batch_records = uint32_t(num("maxBatchRecords", opt.max_batch_records, kU32));
    opt.max_batch_bytes = uint32_t(num("maxBatchBytes", opt.max_batch_bytes, kU32));
    opt.batch_delay_us = uint32_t(num("batchDelayUs", opt.batch_delay_us, kU32));
    opt.max_outstanding = uint32_t(num("maxOutstanding", opt.max_outstanding, kU32));
    opt.response_buffer_bytes = num("responseBufferBytes", opt.response_buffer_bytes, 1ull << 40);
    opt.request_timeout_ms = uint32_t(num("requestTimeoutMs", opt.request_timeout_ms, kU32));
    // dmaLatencyNs: absent = shared memory; else the latency backend (whole ns, 0..1e6).
    if (!o.Get("dmaLatencyNs").IsUndefined()) opt.dma_latency_ns = int64_t(num("dmaLatencyNs", 0, 1000000));
    opt.connect_timeout_ms = uint32_t(num("connectTimeoutMs", opt.connect_timeout_ms, kU32));
    opt.reconnect_ms = uint32_t(num("reconnectMs", opt.reconnect_ms, kU32));
    opt.idle_spin_us = uint32_t(num("idleSpinUs", opt.idle_spin_us, kU32));
    opt.idle_sleep_us = uint32_t(num("idleSleepUs", opt.idle_sleep_us, kU32));
    opt.idle_sleep_max_us = uint32_t(num("idleSleepMaxUs", opt.idle_sleep_max_us, kU32));
    if (const std::string policy = o.Get("placement").IsUndefined() ? "" : text("placement"); !policy.empty()) {
      if (!pd3::parse_placement_policy(policy, &opt.placement))
        throw Napi::TypeError::New(env, "placement must be \"p2c\", \"most-free\" or \"random\"");
    }
    opt.refraction_ms = uint32_t(num("refractionMs", opt.refraction_ms, kU32));
    opt.host_view = o.Get("hostView").IsUndefined() ? true : o.Get("hostView").ToBoolean().Value();
    opt.host_view_options.capacity = num("hostViewCapacity", 0, 4000000000ull);
    opt.host_view_options.shards = uint32_t(num("hostViewShards", 0, 64));
    opt.host_view_options.idle_spin_us = uint32_t(num("hostViewSpinUs", 0, pd3::kMaxHostViewSpinUs));
    if (!o.Get("prefetch").IsUndefined()) {
      if (!o.Get("prefetch").IsObject()) throw Napi::TypeError::New(env, "prefetch must be an object");
      Napi::Object p = o.Get("prefetch").As<Napi::Object>();
      auto field = [&](const char* k, bool required) -> std::string {
        Napi::Value v = p.Get(k);
        if (v.IsUndefined() && !required) return "";
        if (!v.IsString()) throw Napi::TypeError::New(env, std::string("prefetch.") + k + " must be a string");
        return v.As<Napi::String>().Utf8Value();
      };
      auto endpoint = [&](const char* k, bool required, pd3::Endpoint* out) {
        const std::string t = field(k, required);
        if (!t.empty() && !pd3::parse_endpoint(t, out, /*any_port=*/!required))
          throw Napi::TypeError::New(env, std::string("prefetch.") + k + " must be \"host:port\"");
      };
      opt.prefetch.parser = field("parser", true);
      opt.prefetch.backend = field("backend", true);
      endpoint("app", true, &opt.prefetch.app);
      endpoint("listen", false, &opt.prefetch.listen);
      if (const std::string i = field("interface", false); !i.empty()) opt.prefetch.interface = i;
      if (const std::string i = field("issuer", false); !i.empty()) opt.prefetch.issuer = i;
      if (const std::string r = field("ring", false); !r.empty()) opt.prefetch.mirror_ring = r;
      const Napi::Value external = p.Get("external");
      if (!external.IsUndefined() && !external.IsBoolean())
        throw Napi::TypeError::New(env, "prefetch.external must be a boolean");
      opt.prefetch.external_parser = external.IsBoolean() && external.As<Napi::Boolean>().Value();
      auto pnum = [&](const char* k, uint64_t dflt, uint64_t max) {
        Napi::Value v = p.Get(k);
        if (v.IsUndefined()) return dflt;
        if (!v.IsNumber() || v.As<Napi::Number>().DoubleValue() < 0 || v.As<Napi::Number>().DoubleValue() > double(max))
          throw Napi::RangeError::New(env, std::string("prefetch.") + k + " out of range");
        return uint64_t(v.As<Napi::Number>().DoubleValue());
      };
      opt.prefetch.prefetcher.max_inflight = uint32_t(pnum("maxInflight", opt.prefetch.prefetcher.max_inflight, 16384));
      opt.prefetch.prefetcher.max_item_bytes =
          uint32_t(pnum("maxItemBytes", opt.prefetch.prefetcher.max_item_bytes, 0x7FFFFFFF));
      opt.prefetch.hint_timeout_ms = uint32_t(pnum("hintTimeoutMs", opt.prefetch.hint_timeout_ms, 3600000));
      opt.prefetch.mirror_spin_us = uint32_t(pnum("spinUs", opt.prefetch.mirror_spin_us, pd3::kMirrorMaxSpinUs));
      opt.prefetch.mirror_slice_us = uint32_t(pnum("sliceUs", opt.prefetch.mirror_slice_us, pd3::kMirrorMaxSliceUs));
      if (!p.Get("dpdk").IsUndefined()) {
        if (!p.Get("dpdk").IsObject()) throw Napi::TypeError::New(env, "prefetch.dpdk must be an object");
        Napi::Object d = p.Get("dpdk").As<Napi::Object>();
        pd3::DpdkMirrorOptions& o = opt.prefetch.dpdk;
        auto dtext = [&](const char* k, std::string* out) {
          Napi::Value v = d.Get(k);
          if (v.IsUndefined()) return;
          if (!v.IsString()) throw Napi::TypeError::New(env, std::string("prefetch.dpdk.") + k + " must be a string");
          *out = v.As<Napi::String>().Utf8Value();
        };
        auto dnum = [&](const char* k, uint32_t* out, uint32_t max) {
          Napi::Value v = d.Get(k);
          if (v.IsUndefined()) return;
          if (!v.IsNumber() || v.As<Napi::Number>().DoubleValue() < 0 || v.As<Napi::Number>().DoubleValue() > double(max))
            throw Napi::RangeError::New(env, std::string("prefetch.dpdk.") + k + " out of range");
          *out = uint32_t(v.As<Napi::Number>().DoubleValue());
        };
        dtext("ealArgs", &o.eal_args);
        dtext("port", &o.port);
        dtext("probe", &o.probe_path);
        dnum("mbufs", &o.mbufs, pd3::kDpdkMaxMbufs);
        dnum("mbufBytes", &o.mbuf_bytes, pd3::kDpdkMaxMbufBytes);
        dnum("rxDesc", &o.rx_desc, 16384);
        dnum("burst", &o.burst, pd3::kDpdkMaxBurst);
        dnum("spinUs", &o.spin_us, pd3::kDpdkMaxSpinUs);
        dnum("sleepMinUs", &o.sleep_min_us, pd3::kDpdkMaxSleepUs);
        dnum("sleepMaxUs", &o.sleep_max_us, pd3::kDpdkMaxSleepUs);
        const Napi::Value promisc = d.Get("promiscuous");
        if (!promisc.IsUndefined()) {
          if (!promisc.IsBoolean()) throw Napi::TypeError::New(env, "prefetch.dpdk.promiscuous must be a boolean");
          o.promiscuous = promisc.As<Napi::Boolean>().Value();
        }
      }
    }
    if (const int rc = pd3::TransferEngine::start(opt, &engine_)) throw_status(env, rc, "TransferEngine");
  }

 private:
  pd3::TransferEngine& engine(Napi::Env env) {
    if (!engine_) throw Napi::Error::New(env, "the engine is closed");
    return *engine_;
  }

  // stats(): every EngineStats field, by its C++ name.
  Napi::Value Stats(const Napi::CallbackInfo& info) {
    const pd3::EngineStats s = engine(info.Env()).stats();
    Napi::Object o = Napi::Object::New(info.Env());
#define PD3_SET_FIELD(name) o.Set(#name, double(s.name));
    PD3_ENGINE_STATS_FIELDS(PD3_SET_FIELD)
#undef PD3_SET_FIELD
    return o;
  }

  // servers(): NativeServerState[]
  Napi::Value Servers(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const auto states = engine(env).servers();
    Napi::Array out = Napi::Array::New(env, states.size());
    for (uint32_t i = 0; i < states.size(); ++i) {
      Napi::Object s = Napi::Object::New(env);
      s.Set("endpoint", states[i].endpoint.str());
      s.Set("connected", states[i].connected);
      s.Set("serverId", states[i].server_id);
      s.Set("capacity", double(states[i].capacity));
      s.Set("freeBytes", double(states[i].free_bytes));
      s.Set("placeable", states[i].placeable);
      s.Set("lastError", states[i].last_error);
      out.Set(i, s);
    }
    return out;
  }

  // setMember(address: "host:port", member: boolean): the pool's membership changed
  // (TransferEngine::set_member); applied by the engine thread.
  Napi::Value SetMember(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    pd3::Endpoint ep;
    if (info.Length() < 2 || !info[0].IsString() || !info[1].IsBoolean() ||
        !pd3::parse_endpoint(info[0].As<Napi::String>().Utf8Value(), &ep))
      throw Napi::TypeError::New(env, "setMember(address: \"host:port\", member: boolean)");
    if (const int rc = engine(env).set_member(ep, info[1].As<Napi::Boolean>().Value())) throw_status(env, rc, "setMember");
    return env.Undefined();
  }

  // takeLogs(): {events: NativeLogEvent[], dropped}; after close(), the events of the shutdown.
  Napi::Value TakeLogs(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    uint64_t dropped = 0;
    std::vector<pd3::LogEvent> events;
    if (engine_) {
      events = engine_->log().take(&dropped);
    } else {
      events = std::move(final_logs_);
      dropped = final_dropped_;
      final_logs_.clear();
      final_dropped_ = 0;
    }
    return log_events(env, events, dropped);
  }

  // teePort(): the tee proxy's port when prefetching runs on the tee backend, else 0.
  Napi::Value TeePort(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), engine(info.Env()).tee_port());
  }

  // attachParser(parser: Parser, onFlowEvents: () => void): with prefetch.external, runs this TS
  // parser on the JS thread and starts capturing; onFlowEvents is called when captured flow events
  // wait for pumpFlows(). Once.
  Napi::Value AttachParser(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 2 || !info[0].IsObject() || !info[1].IsFunction())
      throw Napi::TypeError::New(env, "attachParser(parser, onFlowEvents)");
    pd3::PrefetchPath* path = engine(env).prefetch_path();
    if (path == nullptr) throw Napi::Error::New(env, "prefetching is off on this engine");
    if (bridge_) throw Napi::Error::New(env, "a parser is attached already");
    auto bridge = std::make_unique<JsParserBridge>(env, info[0].As<Napi::Object>());
    pd3::ParserHandle handle;
    if (const int rc = bridge->handle(&handle)) throw_status(env, rc, "attachParser");
    wake_ = Napi::ThreadSafeFunction::New(env, info[1].As<Napi::Function>(), "pd3-flow-events", 0, 1);
    wake_.Unref(env);  // an idle capture must not keep the process alive
    wake_set_ = true;
    bridge_ = std::move(bridge);
    // The capture thread's wake-up: queue one call of onFlowEvents (non-blocking; a full queue of
    // calls means one is pending anyway).
    const int rc = path->attach_external(std::move(handle), [tsfn = wake_]() mutable { tsfn.NonBlockingCall(); });
    if (rc != PD3_OK) throw_status(env, rc, "attachParser");
    return env.Undefined();
  }

  // pumpFlows(max?: number): parses up to `max` (default 256) captured flow events on this thread;
  // returns how many (max: call again).
  Napi::Value PumpFlows(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    size_t max = 256;
    if (info.Length() > 0 && info[0].IsNumber()) max = size_t(std::max(1.0, info[0].As<Napi::Number>().DoubleValue()));
    if (!engine_ || engine_->prefetch_path() == nullptr) return Napi::Number::New(env, 0);
    return Napi::Number::New(env, double(engine_->prefetch_path()->pump_external(max)));
  }

  // close(): stops the thread (answering what it holds) and detaches; idempotent. The log events
  // up to the stop are kept for a last takeLogs().
  Napi::Value Close(const Napi::CallbackInfo& info) {
    if (engine_) {
      engine_->stop();  // the capture thread first: nothing calls the wake-up after this
      uint64_t dropped = 0;
      for (pd3::LogEvent& e : engine_->log().take(&dropped)) final_logs_.push_back(std::move(e));
      final_dropped_ += dropped;
      release();
    }
    return info.Env().Undefined();
  }

  // Stops the engine (a no-op if stopped), then lets go of the TS parser: the engine's tap closes
  // its TS flows (on this thread) before the bridge goes, and the capture thread that calls the
  // wake-up is stopped before it is released.
  void release() {
    engine_.reset();
    bridge_.reset();
    if (wake_set_) wake_.Release();
    wake_set_ = false;
  }

 public:
  ~EngineHandle() override { release(); }

 private:
  bool wake_set_ = false;
  // Declared before engine_: destroyed after it (the engine's tap calls into the bridge).
  std::unique_ptr<JsParserBridge> bridge_;
  Napi::ThreadSafeFunction wake_;  // set by attachParser: the capture thread's wake-up
  std::unique_ptr<pd3::TransferEngine> engine_;
  std::vector<pd3::LogEvent> final_logs_;  // taken at close(), handed out by the next takeLogs()
  uint64_t final_dropped_ = 0;
};

}  // namespace

void init_engine(Napi::Env env, Napi::Object exports) { EngineHandle::Init(env, exports); }

}  // namespace pd3addon
