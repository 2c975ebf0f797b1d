// agent_binding.cpp — AgentHandle: the agent's side of a segment for TS (thin wrapper of AgentSession).
#include <memory>
#include <string>

#include "shared/addon.hpp"
#include "dpu/agent_session.hpp"

namespace pd3addon {

namespace {

// JS wrapper of one pd3::AgentSession. Use from one JS thread only, as the session requires.
class AgentHandle : public Napi::ObjectWrap<AgentHandle> {
 public:
  static void Init(Napi::Env env, Napi::Object exports) {
    Napi::Function cls = DefineClass(
        env, "AgentHandle",
        {InstanceMethod<&AgentHandle::Beat>("beat"), InstanceMethod<&AgentHandle::TakeRequests>("takeRequests"),
         InstanceMethod<&AgentHandle::Respond>("respond"), InstanceMethod<&AgentHandle::Produce>("produce"),
         InstanceMethod<&AgentHandle::Clean>("clean"), InstanceMethod<&AgentHandle::Invalidate>("invalidate"),
         InstanceMethod<&AgentHandle::Pending>("pending"), InstanceMethod<&AgentHandle::Close>("close")});
    exports.Set("AgentHandle", cls);
  }

  // new AgentHandle(name, dmaLatencyNs?): absent, host memory through shared memory; else the DMA
  // latency backend with that many ns per operation (0..1e6).
  explicit AgentHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<AgentHandle>(info) {
    if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(info.Env(), "AgentHandle(name)");
    const std::string name = info[0].As<Napi::String>();
    pd3::DmaSetup dma;
    if (info.Length() > 1 && !info[1].IsUndefined()) dma.latency_ns = int64_t(u32_arg(info, 1, "dmaLatencyNs", 1000000));
    if (const int rc = pd3::AgentSession::attach(name.c_str(), &session_, dma)) throw_status(info.Env(), rc, "attach");
  }

 private:
  pd3::AgentSession& session(Napi::Env env) {
    if (!session_) throw Napi::Error::New(env, "the agent handle is closed");
    return *session_;
  }

  Napi::Value Beat(const Napi::CallbackInfo& info) {
    session(info.Env()).beat();
    return info.Env().Undefined();
  }

  // takeRequests(max): [{opId, op, id, region, offset, size, payload: Buffer, status}], or throws
  // PD3_E_CORRUPT when the ring's framing is broken.
  Napi::Value TakeRequests(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const uint32_t max = info.Length() > 0 ? u32_arg(info, 0, "max") : 1024;
    Napi::Array out = Napi::Array::New(env);
    uint32_t n = 0;
    const int rc = session(env).take_requests(max, [&](const pd3::RequestView& v) {
      Napi::Object r = Napi::Object::New(env);
      r.Set("opId", v.hdr.op_id);
      r.Set("op", pd3_op_of(v.hdr.op_id));
      r.Set("id", pd3_id_of(v.hdr.op_id));
      r.Set("region", v.hdr.region);
      r.Set("offset", v.hdr.offset);
      r.Set("size", v.hdr.size);
      r.Set("status", v.status);
      const uint32_t len = v.status == PD3_OK ? pd3_request_payload_len(&v.hdr) : 0;
      r.Set("payload", Napi::Buffer<uint8_t>::Copy(env, v.payload, len));
      out.Set(n++, r);
    });
    if (rc < 0) throw_status(env, rc, "takeRequests");
    return out;
  }

  // respond(opId, status, data?: Uint8Array): PD3_OK or a negative status (PD3_E_AGAIN when full).
  Napi::Value Respond(const Napi::CallbackInfo& info) {
    const uint32_t op_id = u32_arg(info, 0, "opId", 0xFFFF);
    if (info.Length() < 2 || !info[1].IsNumber()) throw Napi::TypeError::New(info.Env(), "status must be a number");
    const int status = info[1].As<Napi::Number>().Int32Value();
    Bytes data{nullptr, 0};
    uint32_t size = 0;
    if (info.Length() > 2 && !info[2].IsUndefined()) {
      if (info[2].IsNumber()) {
        size = u32_arg(info, 2, "size");  // a size without data (WRITE acknowledgements)
      } else {
        data = bytes_arg(info, 2, "data");
        size = uint32_t(data.size);
      }
    }
    return Napi::Number::New(info.Env(), session(info.Env()).respond(uint16_t(op_id), status, data.data, size));
  }

  // produce(opId, key, data): the item's seq, or a negative status.
  Napi::Value Produce(const Napi::CallbackInfo& info) {
    const uint32_t op_id = u32_arg(info, 0, "opId", 0xFFFF);
    const Bytes key = bytes_arg(info, 1, "key");
    const Bytes data = bytes_arg(info, 2, "data");
    if (key.size > 0xFFFFFFFFull || data.size > 0xFFFFFFFFull)
      throw Napi::RangeError::New(info.Env(), "key or data too large");
    return Napi::Number::New(info.Env(), double(session(info.Env()).zone().produce(
                                             uint16_t(op_id), key.data, uint32_t(key.size), data.data, uint32_t(data.size))));
  }
  Napi::Value Clean(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), session(info.Env()).zone().clean());
  }
  Napi::Value Invalidate(const Napi::CallbackInfo& info) {
    const Bytes key = bytes_arg(info, 0, "key");
    return Napi::Number::New(info.Env(), session(info.Env()).zone().invalidate(key.data, uint32_t(key.size)));
  }
  Napi::Value Pending(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), double(session(info.Env()).zone().pending()));
  }
  Napi::Value Close(const Napi::CallbackInfo& info) {
    session_.reset();
    return info.Env().Undefined();
  }

  std::unique_ptr<pd3::AgentSession> session_;
};

}  // namespace

void init_agent(Napi::Env env, Napi::Object exports) { AgentHandle::Init(env, exports); }

}  // namespace pd3addon
