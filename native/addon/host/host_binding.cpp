// host_binding.cpp — HostHandle: a JS object owning one pd3_host handle (thin wrapper of host.h).
#include <string>

#include "shared/addon.hpp"
#include "pd3/host.h"
#include "common/placement.hpp"

namespace pd3addon {

namespace {

// Values per completion in the Float64Array that poll() fills.
constexpr uint32_t kCompletionFields = 6;

// JS wrapper of one pd3_host handle.
class HostHandle : public Napi::ObjectWrap<HostHandle> {
 public:
  static void Init(Napi::Env env, Napi::Object exports) {
    Napi::Function cls = DefineClass(
        env, "HostHandle",
        {InstanceMethod<&HostHandle::Allocate>("allocate"), InstanceMethod<&HostHandle::Deallocate>("deallocate"),
         InstanceMethod<&HostHandle::Read>("read"), InstanceMethod<&HostHandle::Write>("write"),
         InstanceMethod<&HostHandle::Poll>("poll"), InstanceMethod<&HostHandle::CheckAndReturn>("checkAndReturn"),
         InstanceMethod<&HostHandle::AgentAlive>("agentAlive"), InstanceMethod<&HostHandle::Inflight>("inflight"),
         InstanceMethod<&HostHandle::SegmentBuffer>("segmentBuffer"),
         InstanceMethod<&HostHandle::SetDirectMember>("setDirectMember"), InstanceMethod<&HostHandle::Close>("close")});
    exports.Set("HostHandle", cls);
  }

  // new HostHandle("create", {name, requestRingBytes, responseRingBytes, lzDataBytes, lzItems,
  //                           agentTimeoutMs, replace, fallback, directOnly, directServers,
  //                           directToken, directTimeoutMs, directPlacement, directRefractionMs,
  //                           publishBatch, directMrCacheBytes, directUnregistered})
  //   | new HostHandle("attach", name)
  explicit HostHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<HostHandle>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 2 || !info[0].IsString()) throw Napi::TypeError::New(env, "HostHandle(mode, options)");
    const std::string mode = info[0].As<Napi::String>();
    if (mode == "attach") {
      if (!info[1].IsString()) throw Napi::TypeError::New(env, "attach needs a segment name");
      const std::string name = info[1].As<Napi::String>();
      if (const int rc = pd3_host_attach(name.c_str(), &h_)) throw_status(env, rc, "attach");
      return;
    }
    if (mode != "create" || !info[1].IsObject()) throw Napi::TypeError::New(env, "create needs an options object");
    Napi::Object o = info[1].As<Napi::Object>();
    auto opt = [&](const char* key) -> double {
      Napi::Value v = o.Get(key);
      if (v.IsUndefined()) return 0;
      if (!v.IsNumber()) throw Napi::TypeError::New(env, std::string(key) + " must be a number");
      const double d = v.As<Napi::Number>().DoubleValue();
      if (!(d >= 0) || d != double(uint64_t(d)))
        throw Napi::RangeError::New(env, std::string(key) + " must be a non-negative integer");
      return d;
    };
    auto str = [&](const char* key) -> std::string {
      Napi::Value v = o.Get(key);
      if (v.IsUndefined()) return "";
      if (!v.IsString()) throw Napi::TypeError::New(env, std::string(key) + " must be a string");
      return v.As<Napi::String>().Utf8Value();
    };
    const std::string name = o.Get("name").IsString() ? o.Get("name").As<Napi::String>().Utf8Value() : "";
    const std::string servers = str("directServers");
    const std::string token = str("directToken");
    const std::string tenant = str("directTenant");
    const std::string fallback = str("fallback");
    if (!fallback.empty() && fallback != "fail" && fallback != "direct")
      throw Napi::TypeError::New(env, "fallback must be 'fail' or 'direct'");
    pd3_host_config cfg{};
    cfg.name = name.c_str();
    cfg.sizes.request_ring_bytes = uint64_t(opt("requestRingBytes"));
    cfg.sizes.response_ring_bytes = uint64_t(opt("responseRingBytes"));
    cfg.sizes.lz_data_bytes = uint64_t(opt("lzDataBytes"));
    cfg.sizes.lz_items = uint32_t(opt("lzItems"));
    cfg.agent_timeout_ms = uint32_t(opt("agentTimeoutMs"));
    cfg.flags = (o.Get("replace").ToBoolean() ? PD3_HOST_REPLACE : 0) |
                (o.Get("directOnly").ToBoolean() ? PD3_HOST_DIRECT_ONLY : 0) |
                (o.Get("directUnregistered").ToBoolean() ? PD3_HOST_DIRECT_UNREGISTERED : 0);
    cfg.fallback = fallback == "direct" ? PD3_FALLBACK_DIRECT : PD3_FALLBACK_FAIL;
    cfg.direct_servers = servers.c_str();
    cfg.direct_token = token.c_str();
    cfg.direct_tenant = tenant.c_str();
    cfg.direct_timeout_ms = uint32_t(opt("directTimeoutMs"));
    if (const std::string placement = str("directPlacement"); !placement.empty()) {
      pd3::PlacementPolicy policy;
      if (!pd3::parse_placement_policy(placement, &policy))
        throw Napi::TypeError::New(env, "directPlacement must be 'p2c', 'most-free' or 'random'");
      cfg.direct_placement = uint32_t(policy);
    }
    const double refraction = opt("directRefractionMs");
    if (refraction > 3'600'000) throw Napi::RangeError::New(env, "directRefractionMs must be at most 3600000");
    cfg.direct_refraction_ms = uint32_t(refraction);
    const double batch = opt("publishBatch");
    if (batch > PD3_MAX_PUBLISH_BATCH)
      throw Napi::RangeError::New(env, "publishBatch must be at most " + std::to_string(PD3_MAX_PUBLISH_BATCH));
    cfg.publish_batch = uint32_t(batch);
    const double mr_cache = opt("directMrCacheBytes");
    if (mr_cache > double(UINT32_MAX)) throw Napi::RangeError::New(env, "directMrCacheBytes must be below 4 GiB");
    cfg.direct_mr_cache_bytes = uint32_t(mr_cache);
    if (const int rc = pd3_host_create(&cfg, &h_)) throw_status(env, rc, "create");
  }

  ~HostHandle() override { pd3_host_close(h_); }

 private:
  pd3_host* handle(Napi::Env env) const {
    if (h_ == nullptr) throw Napi::Error::New(env, "the host handle is closed");
    return h_;
  }
  static uint64_t user_data(const Napi::CallbackInfo& info, size_t i) {
    return info[i].IsNumber() ? uint64_t(info[i].As<Napi::Number>().DoubleValue()) : 0;
  }

  // Each issuing method returns the request id or a negative status (never throws for ring state).
  Napi::Value Allocate(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), pd3_host_allocate(handle(info.Env()), u32_arg(info, 0, "bytes"), user_data(info, 1)));
  }
  Napi::Value Deallocate(const Napi::CallbackInfo& info) {
    const uint32_t region = u32_arg(info, 0, "region");
    return Napi::Number::New(info.Env(), pd3_host_deallocate(handle(info.Env()), region, user_data(info, 1)));
  }
  // read(region, offset, dest: Uint8Array, userData): dest.length bytes land in dest on completion.
  Napi::Value Read(const Napi::CallbackInfo& info) {
    const uint32_t region = u32_arg(info, 0, "region");
    const uint32_t offset = u32_arg(info, 1, "offset");
    const Bytes dest = bytes_arg(info, 2, "dest");
    if (dest.size > 0xFFFFFFFFull) throw Napi::RangeError::New(info.Env(), "read is larger than 4 GiB");
    return Napi::Number::New(info.Env(), pd3_host_read(handle(info.Env()), region, offset,
                                                       uint32_t(dest.size), dest.data, user_data(info, 3)));
  }
  Napi::Value Write(const Napi::CallbackInfo& info) {
    const uint32_t region = u32_arg(info, 0, "region");
    const uint32_t offset = u32_arg(info, 1, "offset");
    const Bytes src = bytes_arg(info, 2, "data");
    if (src.size > 0xFFFFFFFFull) throw Napi::RangeError::New(info.Env(), "write is larger than 4 GiB");
    return Napi::Number::New(info.Env(), pd3_host_write(handle(info.Env()), region, offset, src.data,
                                                        uint32_t(src.size), user_data(info, 3)));
  }
  // poll(out: Float64Array): fills [userData, status, size, id, op, region] per completion.
  Napi::Value Poll(const Napi::CallbackInfo& info) {
    if (info.Length() < 1 || !info[0].IsTypedArray() ||
        info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array)
      throw Napi::TypeError::New(info.Env(), "poll needs a Float64Array");
    auto out = info[0].As<Napi::Float64Array>();
    pd3_completion batch[256];
    const uint32_t room = uint32_t(std::min<size_t>(out.ElementLength() / kCompletionFields, 256));
    const int n = pd3_host_poll(handle(info.Env()), batch, room);
    for (int i = 0; i < n; ++i) {
      double* row = out.Data() + size_t(i) * kCompletionFields;
      row[0] = double(batch[i].user_data), row[1] = batch[i].status, row[2] = batch[i].size;
      row[3] = batch[i].id, row[4] = batch[i].op, row[5] = batch[i].region;
    }
    return Napi::Number::New(info.Env(), n);
  }
  // checkAndReturn(key: Uint8Array, dest: Uint8Array): size, 0 on a miss, or a negative status.
  // Raw napi calls: this is the hot path measured by the loading-zone benchmark.
  Napi::Value CheckAndReturn(const Napi::CallbackInfo& info) {
    napi_env env = info.Env();
    void* key = nullptr;
    void* dest = nullptr;
    size_t key_len = 0, dest_len = 0;
    napi_typedarray_type kt, dt;
    if (info.Length() < 2 ||
        napi_get_typedarray_info(env, info[0], &kt, &key_len, &key, nullptr, nullptr) != napi_ok ||
        napi_get_typedarray_info(env, info[1], &dt, &dest_len, &dest, nullptr, nullptr) != napi_ok ||
        kt != napi_uint8_array || dt != napi_uint8_array)
      throw Napi::TypeError::New(env, "checkAndReturn(key: Uint8Array, dest: Uint8Array)");
    const int64_t r = pd3_host_check_and_return(handle(env), key, uint32_t(key_len), dest,
                                                uint32_t(std::min<size_t>(dest_len, 0xFFFFFFFFu)));
    napi_value out;
    napi_create_int64(env, r, &out);
    return Napi::Value(env, out);
  }
  Napi::Value AgentAlive(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), pd3_host_agent_alive(handle(info.Env())) == 1);
  }
  Napi::Value Inflight(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), pd3_host_inflight(handle(info.Env())));
  }
  // segmentBuffer(): an ArrayBuffer over the whole mapped segment. It holds its own handle, so the
  // mapping outlives close() of this one for as long as the buffer is reachable.
  Napi::Value SegmentBuffer(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    pd3_host* keep = nullptr;
    // Re-attaching in-process shares the mapping (no new mmap) and pins it.
    if (const int rc = pd3_host_attach(pd3_host_name(handle(env)), &keep)) throw_status(env, rc, "segmentBuffer");
    const pd3_control* kc = pd3_host_control(keep);
    return Napi::ArrayBuffer::New(env, const_cast<pd3_control*>(kc), size_t(kc->segment_size),
                                  [](Napi::Env, void*, pd3_host* k) { pd3_host_close(k); }, keep);
  }
  // setDirectMember(address: string, member: boolean): throws with pd3_last_error's reason.
  Napi::Value SetDirectMember(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 2 || !info[0].IsString() || !info[1].IsBoolean())
      throw Napi::TypeError::New(env, "setDirectMember(address: string, member: boolean)");
    const std::string address = info[0].As<Napi::String>().Utf8Value();
    if (const int rc = pd3_host_set_direct_member(handle(env), address.c_str(), info[1].As<Napi::Boolean>().Value() ? 1 : 0))
      throw_status(env, rc, "setDirectMember");
    return env.Undefined();
  }
  Napi::Value Close(const Napi::CallbackInfo& info) {
    pd3_host_close(h_);
    h_ = nullptr;
    return info.Env().Undefined();
  }

  pd3_host* h_ = nullptr;
};

}  // namespace

void init_host(Napi::Env env, Napi::Object exports) { HostHandle::Init(env, exports); }

}  // namespace pd3addon
