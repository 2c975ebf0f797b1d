// helpers.cpp — what every addon's bindings share: status errors, argument checks, log events, the
// module entry.
#include "shared/addon.hpp"

#include <string>

#include "pd3/status.h"

namespace pd3addon {

void throw_status(Napi::Env env, int status, const char* what) {
  const char* detail = pd3_last_error();
  std::string msg = std::string(what) + ": " + (detail[0] ? detail : pd3_status_str(status));
  Napi::Error err = Napi::Error::New(env, msg);
  err.Set("code", Napi::String::New(env, pd3_status_name(status)));
  err.Set("status", Napi::Number::New(env, status));
  throw err;
}

Bytes bytes_arg(const Napi::CallbackInfo& info, size_t index, const char* name) {
  if (info.Length() <= index || !info[index].IsTypedArray() ||
      info[index].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw Napi::TypeError::New(info.Env(), std::string(name) + " must be a Uint8Array");
  auto a = info[index].As<Napi::Uint8Array>();
  return {a.Data(), a.ByteLength()};
}

uint32_t u32_arg(const Napi::CallbackInfo& info, size_t index, const char* name, uint64_t max) {
  if (info.Length() <= index || !info[index].IsNumber())
    throw Napi::TypeError::New(info.Env(), std::string(name) + " must be a number");
  const double v = info[index].As<Napi::Number>().DoubleValue();
  if (!(v >= 0 && v <= double(max)) || v != double(uint64_t(v)))
    throw Napi::RangeError::New(info.Env(), std::string(name) + " must be an integer in [0, " + std::to_string(max) + "]");
  return uint32_t(v);
}

Napi::Object log_events(Napi::Env env, const std::vector<pd3::LogEvent>& events, uint64_t dropped) {
  Napi::Array list = Napi::Array::New(env, events.size());
  for (uint32_t i = 0; i < events.size(); ++i) {
    Napi::Object e = Napi::Object::New(env);
    e.Set("level", pd3::log_level_name(events[i].level));
    e.Set("event", events[i].event);
    e.Set("message", events[i].message);
    list.Set(i, e);
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("events", list);
  out.Set("dropped", double(dropped));
  return out;
}

Napi::Object export_part(Napi::Env env, Napi::Object exports, std::initializer_list<InitBindings> inits) {
  exports.Set("constants", constants(env));
  for (InitBindings init : inits) init(env, exports);
  return exports;
}

}  // namespace pd3addon
