// transport_client_binding.cpp — TransportClient: a client connection to a memory server
// (SyncClient) for the pool's region migrator (thin wrapper). Each call runs on the libuv thread
// pool and returns a promise, so a slow or frozen peer never blocks the JS thread (which keeps the
// server's leases alive); one call at a time per client.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "memserver/sync_client.hpp"
#include "pd3/status.h"
#include "shared/addon.hpp"

namespace pd3addon {

namespace {

// One SyncClient step on the thread pool, settling a promise: with {status, data} when the step
// returned PD3_OK, else with an Error carrying code and status (as throw_status builds).
class ClientStep : public Napi::AsyncWorker {
 public:
  using Step = std::function<int(pd3::SyncReply*)>;
  ClientStep(Napi::Env env, Napi::Object owner, bool* busy, Step step, std::string what, bool with_reply)
      : Napi::AsyncWorker(env),
        deferred_(Napi::Promise::Deferred::New(env)),
        owner_(Napi::Persistent(owner)),
        busy_(busy),
        step_(std::move(step)),
        what_(std::move(what)),
        with_reply_(with_reply) {}

  Napi::Promise promise() const { return deferred_.Promise(); }

  void Execute() override {
    rc_ = step_(&reply_);
    if (rc_ != PD3_OK) detail_ = pd3_last_error();  // thread-local: read on the thread that failed
  }

  void OnOK() override {
    Napi::Env env = Env();
    *busy_ = false;
    if (rc_ != PD3_OK) {
      Napi::Error err = Napi::Error::New(env, what_ + ": " + (detail_.empty() ? pd3_status_str(rc_) : detail_));
      err.Set("code", Napi::String::New(env, pd3_status_name(rc_)));
      err.Set("status", Napi::Number::New(env, rc_));
      deferred_.Reject(err.Value());
      return;
    }
    if (!with_reply_) {
      deferred_.Resolve(env.Undefined());
      return;
    }
    Napi::Object out = Napi::Object::New(env);
    out.Set("status", double(reply_.status));
    out.Set("data", Napi::Buffer<uint8_t>::Copy(env, reply_.data.data(), reply_.data.size()));
    deferred_.Resolve(out);
  }

 private:
  Napi::Promise::Deferred deferred_;
  Napi::ObjectReference owner_;  // keeps the client (and its SyncClient) alive while the step runs
  bool* busy_;
  Step step_;
  std::string what_;
  bool with_reply_;
  int rc_ = PD3_OK;
  std::string detail_;
  pd3::SyncReply reply_;
};

// JS wrapper of one SyncClient.
class TransportClient : public Napi::ObjectWrap<TransportClient> {
 public:
  static void Init(Napi::Env env, Napi::Object exports) {
    Napi::Function cls = DefineClass(
        env, "TransportClient",
        {InstanceMethod<&TransportClient::Connect>("connect"), InstanceMethod<&TransportClient::Request>("request"),
         InstanceMethod<&TransportClient::MaxPayload>("maxPayload"),
         InstanceMethod<&TransportClient::Connected>("connected"), InstanceMethod<&TransportClient::Close>("close")});
    exports.Set("TransportClient", cls);
  }

  explicit TransportClient(const Napi::CallbackInfo& info) : Napi::ObjectWrap<TransportClient>(info) {}

 private:
  // connect(address, token, tenant, timeoutMs): Promise<void>, rejected with a status error
  // (PD3_E_AUTH, PD3_E_TIMEOUT, ...).
  Napi::Value Connect(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 4 || !info[0].IsString() || !info[1].IsString() || !info[2].IsString())
      throw Napi::TypeError::New(env, "connect(address: string, token: string, tenant: string, timeoutMs: number)");
    const uint32_t timeout_ms = u32_arg(info, 3, "timeoutMs", 600'000);
    if (timeout_ms == 0) throw Napi::RangeError::New(env, "timeoutMs must be at least 1");
    std::string address = info[0].As<Napi::String>().Utf8Value();
    std::string token = info[1].As<Napi::String>().Utf8Value();
    std::string tenant = info[2].As<Napi::String>().Utf8Value();
    const std::string what = "connect " + address;
    return start(info, what, false, [this, address, token, tenant, timeout_ms](pd3::SyncReply*) {
      return client_.connect(address, token, tenant, int(timeout_ms));
    });
  }

  // request(op, region, offset, size, data?): Promise<{status, data}> of the server's answer;
  // rejected with a status error when no answer came (the connection is then closed).
  Napi::Value Request(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const uint32_t op = u32_arg(info, 0, "op", 3);
    if (op == PD3_OP_PREFETCH) throw Napi::RangeError::New(env, "request() sends READ, WRITE or CONTROL records");
    const pd3_request request =
        pd3_make_request(pd3_op_id(op, 0), u32_arg(info, 1, "region"), u32_arg(info, 2, "offset"), u32_arg(info, 3, "size"));
    std::vector<uint8_t> data;
    if (op == PD3_OP_WRITE) {
      const Bytes bytes = bytes_arg(info, 4, "data");
      if (bytes.size != request.size) throw Napi::RangeError::New(env, "a WRITE's data must be `size` bytes");
      data.assign(bytes.data, bytes.data + bytes.size);  // the JS buffer may change while the step runs
    }
    return start(info, "request", true, [this, request, data = std::move(data)](pd3::SyncReply* reply) {
      return client_.call(request, data.data(), uint32_t(data.size()), reply);
    });
  }

  // maxPayload(): refused while a call runs (a connect on the thread pool may be setting it).
  Napi::Value MaxPayload(const Napi::CallbackInfo& info) {
    if (busy_) throw Napi::Error::New(info.Env(), "maxPayload() while a call is under way");
    return Napi::Number::New(info.Env(), client_.max_payload());
  }

  Napi::Value Connected(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), !busy_ && client_.connected());
  }

  // close(): closes the connection; refused while a call runs (await it first).
  Napi::Value Close(const Napi::CallbackInfo& info) {
    if (busy_) throw Napi::Error::New(info.Env(), "close() while a call is under way");
    client_.close();
    return info.Env().Undefined();
  }

  Napi::Value start(const Napi::CallbackInfo& info, const std::string& what, bool with_reply, ClientStep::Step step) {
    if (busy_) throw Napi::Error::New(info.Env(), "one call at a time: await the previous one");
    busy_ = true;
    auto* work = new ClientStep(info.Env(), info.This().As<Napi::Object>(), &busy_, std::move(step), what, with_reply);
    const Napi::Promise promise = work->promise();
    work->Queue();  // the worker deletes itself after OnOK
    return promise;
  }

  pd3::SyncClient client_;
  bool busy_ = false;  // a step is queued or running: the JS thread only reads and writes it
};

}  // namespace

void init_transport_client(Napi::Env env, Napi::Object exports) { TransportClient::Init(env, exports); }

}  // namespace pd3addon
