// host_view_binding.cpp — HostViewHandle: the sharded Host View for TS tests and tools (thin wrapper).
#include <memory>
#include <string>

#include "shared/addon.hpp"
#include "dpu/host_view.hpp"

namespace pd3addon {

namespace {

// Verdict-producing operations take a BigUint64Array of key hashes and return a Uint8Array.
class HostViewHandle : public Napi::ObjectWrap<HostViewHandle> {
 public:
  static void Init(Napi::Env env, Napi::Object exports) {
    Napi::Function cls = DefineClass(
        env, "HostViewHandle",
        {InstanceMethod<&HostViewHandle::Lookup>("lookup"), InstanceMethod<&HostViewHandle::Insert>("insert"),
         InstanceMethod<&HostViewHandle::Erase>("erase"), InstanceMethod<&HostViewHandle::Info>("info"),
         InstanceMethod<&HostViewHandle::Close>("close")});
    exports.Set("HostViewHandle", cls);
    exports.Set("hostViewKeyHash", Napi::Function::New(env, KeyHash, "hostViewKeyHash"));
  }

  // new HostViewHandle({capacity, shards?, maxLoad?, simd?, hugePages?, batched?, delayedSecond?, batch?})
  explicit HostViewHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<HostViewHandle>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsObject()) throw Napi::TypeError::New(env, "HostViewHandle(options)");
    Napi::Object o = info[0].As<Napi::Object>();
    auto num = [&](const char* k, double dflt) {
      Napi::Value v = o.Get(k);
      if (v.IsUndefined()) return dflt;
      if (!v.IsNumber()) throw Napi::TypeError::New(env, std::string(k) + " must be a number");
      return v.As<Napi::Number>().DoubleValue();
    };
    auto flag = [&](const char* k, bool dflt) { return o.Get(k).IsUndefined() ? dflt : o.Get(k).ToBoolean().Value(); };
    pd3::HostViewOptions opt;
    const double capacity = num("capacity", 0), shards = num("shards", 1), batch = num("batch", 128);
    if (!(capacity >= 1 && capacity <= 4e9) || !(shards >= 1 && shards <= 64) || !(batch >= 1 && batch <= 256))
      throw Napi::RangeError::New(env, "capacity must be in [1, 4e9], shards in [1, 64], batch in [1, 256]");
    opt.capacity = uint64_t(capacity);
    opt.shards = uint32_t(shards);
    opt.table.max_load = num("maxLoad", 0.8);
    opt.table.batch = uint32_t(batch);
    opt.table.huge_pages = flag("hugePages", true);
    opt.table.batched = flag("batched", true);
    opt.table.delayed_second = flag("delayedSecond", true);
    const std::string simd = o.Get("simd").IsString() ? o.Get("simd").As<Napi::String>().Utf8Value() : "best";
    bool known = false;
    for (pd3::SimdPath p : {pd3::SimdPath::kBest, pd3::SimdPath::kScalar, pd3::SimdPath::kSse41,
                            pd3::SimdPath::kAvx2, pd3::SimdPath::kNeon})
      if (simd == pd3::simd_path_name(p)) opt.table.simd = p, known = true;
    if (!known) throw Napi::RangeError::New(env, "simd must be best, scalar, sse4.1, avx2 or neon");
    if (const int rc = pd3::HostView::create(opt, &view_)) throw_status(env, rc, "HostView");
  }

 private:
  pd3::HostView& view(Napi::Env env) {
    if (!view_) throw Napi::Error::New(env, "the Host View is closed");
    return *view_;
  }

  Napi::Value Run(const Napi::CallbackInfo& info, pd3::HostViewOp op) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsTypedArray() ||
        info[0].As<Napi::TypedArray>().TypedArrayType() != napi_biguint64_array)
      throw Napi::TypeError::New(env, "hashes must be a BigUint64Array");
    auto hashes = info[0].As<Napi::TypedArrayOf<uint64_t>>();
    Napi::Uint8Array out = Napi::Uint8Array::New(env, hashes.ElementLength());
    view(env).run(op, hashes.Data(), hashes.ElementLength(), out.Data());
    return out;
  }
  Napi::Value Lookup(const Napi::CallbackInfo& info) { return Run(info, pd3::HostViewOp::kLookup); }
  Napi::Value Insert(const Napi::CallbackInfo& info) { return Run(info, pd3::HostViewOp::kInsert); }
  Napi::Value Erase(const Napi::CallbackInfo& info) { return Run(info, pd3::HostViewOp::kErase); }

  // info(): {size, bytes, shards, simd, pages}
  Napi::Value Info(const Napi::CallbackInfo& info) {
    pd3::HostView& v = view(info.Env());
    Napi::Object o = Napi::Object::New(info.Env());
    o.Set("size", double(v.size()));
    o.Set("bytes", double(v.bytes()));
    o.Set("shards", v.shards());
    o.Set("simd", pd3::simd_path_name(v.simd()));
    o.Set("pages", pd3::page_kind_name(v.pages()));
    return o;
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    view_.reset();
    return info.Env().Undefined();
  }

  // hostViewKeyHash(key: Uint8Array): bigint
  static Napi::Value KeyHash(const Napi::CallbackInfo& info) {
    const Bytes key = bytes_arg(info, 0, "key");
    return Napi::BigInt::New(info.Env(), pd3::host_view_key_hash(key.data, key.size));
  }

  std::unique_ptr<pd3::HostView> view_;
};

}  // namespace

void init_host_view(Napi::Env env, Napi::Object exports) { HostViewHandle::Init(env, exports); }

}  // namespace pd3addon
