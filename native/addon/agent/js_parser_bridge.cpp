// js_parser_bridge.cpp — see js_parser_bridge.hpp. A TS parser is untrusted as far as the tap is
// concerned: a throw, a non-object answer, a bad `consumed` or an unknown op is a protocol error on
// that flow (the tap resyncs it), never a crash.
#include "js_parser_bridge.hpp"

#include <cstring>
#include <vector>

#include "pd3/status.h"
#include "pd3/wire.h"

namespace pd3addon {

namespace {

// One flow: the TS FlowParser object, and the keys of its last answer (pd3_access points there).
struct JsFlow {
  Napi::Env env;
  Napi::ObjectReference flow;
  std::vector<std::vector<uint8_t>> keys;
};

// Calls flow[method](copy of buf[0, len)); an empty Value if it threw.
Napi::Value call(JsFlow& f, const char* method, const uint8_t* buf, size_t len) {
  Napi::Object flow = f.flow.Value();
  try {
    Napi::Value fn = flow.Get(method);
    if (!fn.IsFunction()) return Napi::Value();
    // A copy: the parser may keep the bytes (a partial message), and ours are reused.
    return fn.As<Napi::Function>().Call(flow, {Napi::Buffer<uint8_t>::Copy(f.env, buf, len)});
  } catch (const Napi::Error&) {
    return Napi::Value();  // the exception is cleared: a protocol error for this flow
  }
}

uint32_t op_code(const std::string& op) {
  if (op == "READ") return PD3_ACCESS_READ;
  if (op == "WRITE") return PD3_ACCESS_WRITE;
  if (op == "DELETE") return PD3_ACCESS_DELETE;
  return 0;
}

int parse_request(void* state, const uint8_t* buf, size_t len, pd3_access* out, uint32_t max, uint32_t* n,
                  size_t* consumed) {
  JsFlow& f = *static_cast<JsFlow*>(state);
  Napi::HandleScope scope(f.env);
  *n = 0;
  *consumed = 0;
  const Napi::Value r = call(f, "parseRequest", buf, len);
  if (r.IsEmpty() || !r.IsObject()) return PD3_E_PROTOCOL;  // null: not a request of this protocol
  const Napi::Object o = r.As<Napi::Object>();
  const Napi::Value used = o.Get("consumed");
  const Napi::Value list = o.Get("accesses");
  if (!used.IsNumber() || !list.IsArray()) return PD3_E_PROTOCOL;
  const double c = used.As<Napi::Number>().DoubleValue();
  if (!(c >= 0 && c <= double(len)) || c != double(size_t(c))) return PD3_E_PROTOCOL;
  const Napi::Array accesses = list.As<Napi::Array>();
  const uint32_t count = std::min(accesses.Length(), max);  // more keys than fit: the rest is cut
  f.keys.resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    const Napi::Value a = accesses.Get(i);
    if (!a.IsObject()) return PD3_E_PROTOCOL;
    const Napi::Value key = a.As<Napi::Object>().Get("key");
    const Napi::Value op = a.As<Napi::Object>().Get("op");
    if (!key.IsTypedArray() || !op.IsString()) return PD3_E_PROTOCOL;
    const Napi::TypedArray t = key.As<Napi::TypedArray>();
    if (t.TypedArrayType() != napi_uint8_array) return PD3_E_PROTOCOL;
    const Napi::Uint8Array bytes = t.As<Napi::Uint8Array>();
    const uint32_t code = op_code(op.As<Napi::String>().Utf8Value());
    if (code == 0 || bytes.ElementLength() == 0 || bytes.ElementLength() > PD3_MAX_KEY_LEN) return PD3_E_PROTOCOL;
    f.keys[i].assign(bytes.Data(), bytes.Data() + bytes.ElementLength());
    out[i] = pd3_access{f.keys[i].data(), uint32_t(f.keys[i].size()), code};
  }
  *n = count;
  *consumed = size_t(c);
  return PD3_OK;
}

int64_t resync(void* state, const uint8_t* buf, size_t len) {
  JsFlow& f = *static_cast<JsFlow*>(state);
  Napi::HandleScope scope(f.env);
  const Napi::Value r = call(f, "resync", buf, len);
  if (r.IsEmpty() || !r.IsNumber()) return -1;
  const double at = r.As<Napi::Number>().DoubleValue();
  return at >= 0 && at < double(len) && at == double(int64_t(at)) ? int64_t(at) : -1;
}

void flow_close(void* state) { delete static_cast<JsFlow*>(state); }

}  // namespace

JsParserBridge::JsParserBridge(Napi::Env env, Napi::Object parser) : env_(env) {
  if (!parser.Get("name").IsString() || !parser.Get("openFlow").IsFunction())
    throw Napi::TypeError::New(env, "parser must have a string name and an openFlow() function (pd3/parsers Parser)");
  name_ = parser.Get("name").As<Napi::String>().Utf8Value();
  parser_ = Napi::Persistent(parser);
  table_.owner = this;
  table_.table.abi_version = PD3_PARSER_ABI_VERSION;
  table_.table.name = name_.c_str();
  table_.table.flow_open = &JsParserBridge::flow_open;
  table_.table.flow_close = &pd3addon::flow_close;
  table_.table.parse_request = &pd3addon::parse_request;
  table_.table.resync = &pd3addon::resync;
  table_.table.parse_record = nullptr;  // records use the built-in format on the agent (Table 2)
}

void* JsParserBridge::flow_open(const pd3_parser* self) {
  JsParserBridge& b = *reinterpret_cast<const Table*>(self)->owner;
  Napi::HandleScope scope(b.env_);
  try {
    Napi::Object parser = b.parser_.Value();
    const Napi::Value flow = parser.Get("openFlow").As<Napi::Function>().Call(parser, {});
    if (!flow.IsObject()) return nullptr;  // the flow goes without prefetching
    return new JsFlow{b.env_, Napi::Persistent(flow.As<Napi::Object>()), {}};
  } catch (const Napi::Error&) {
    return nullptr;
  }
}

int JsParserBridge::handle(pd3::ParserHandle* out) const { return pd3::use_parser_table(&table_.table, out); }

}  // namespace pd3addon
