// parser_binding.cpp — NativeParser and NativeFlow: the parser plug-in ABI for TS (thin wrappers of
// pd3::ParserHandle and pd3::ParserFlow), and the parser constants.
#include <string>
#include <vector>

#include "shared/addon.hpp"
#include "parsers/parser_flow.hpp"
#include "parsers/plugin_loader.hpp"
#include "pd3/binproto.h"
#include "pd3/parser.h"
#include "pd3/status.h"

namespace pd3addon {

namespace {

// Marks NativeParser objects, so NativeFlow never unwraps another class's object as one.
constexpr napi_type_tag kParserTag = {0x7064335f70617273ull, 0x65725f6e61746976ull};

// Accesses handed over per parse_request call; the binding calls again until the bytes are used.
constexpr uint32_t kAccessBatch = 1024;

// new NativeParser(nameOrPath): a built-in ("resp", "binary") or a parser library.
class NativeParser : public Napi::ObjectWrap<NativeParser> {
 public:
  static void Init(Napi::Env env, Napi::Object exports) {
    Napi::Function cls = DefineClass(env, "NativeParser",
                                     {InstanceAccessor<&NativeParser::Name>("name"),
                                      InstanceAccessor<&NativeParser::IsPlugin>("isPlugin"),
                                      InstanceMethod<&NativeParser::ParseRecord>("parseRecord"),
                                      InstanceMethod<&NativeParser::Close>("close")});
    exports.Set("NativeParser", cls);
  }

  explicit NativeParser(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeParser>(info) {
    if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(info.Env(), "NativeParser(nameOrPath)");
    const std::string what = info[0].As<Napi::String>();
    if (const int rc = pd3::load_parser(what.c_str(), &parser_)) throw_status(info.Env(), rc, "loadParser");
    info.This().As<Napi::Object>().TypeTag(&kParserTag);
  }

  const pd3::ParserHandle& handle(Napi::Env env) const {
    if (!parser_) throw Napi::Error::New(env, "the parser is closed");
    return parser_;
  }

 private:
  Napi::Value Name(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), handle(info.Env())->name); }
  Napi::Value IsPlugin(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), parser_.is_plugin()); }

  // parseRecord(bytes): [{key: Buffer, offset, length, recordOffset, recordLength}] — offset/length
  // locate the value, recordOffset/recordLength the record holding the key.
  Napi::Value ParseRecord(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const Bytes rec = bytes_arg(info, 0, "bytes");
    const pd3::ParserHandle& p = handle(env);
    std::vector<pd3_record_key> keys(kAccessBatch);
    uint32_t n = 0;
    for (;;) {  // grow until every key fits; a parser claiming more keys than bytes is cut there
      if (const int rc = p.parse_record(rec.data, rec.size, keys.data(), uint32_t(keys.size()), &n))
        throw_status(env, rc, "parseRecord");
      if (n < keys.size() || keys.size() > rec.size) break;
      keys.resize(keys.size() * 2);
    }
    Napi::Array out = Napi::Array::New(env, n);
    for (uint32_t i = 0; i < n; ++i) {
      Napi::Object k = Napi::Object::New(env);
      k.Set("key", Napi::Buffer<uint8_t>::Copy(env, rec.data + keys[i].key_off, keys[i].key_len));
      k.Set("offset", double(keys[i].value_off));
      k.Set("length", double(keys[i].value_len));
      k.Set("recordOffset", double(keys[i].record_off));
      k.Set("recordLength", double(keys[i].record_len));
      out.Set(i, k);
    }
    return out;
  }

  // close(): releases the parser (a plug-in library unloads once its flows are closed too).
  Napi::Value Close(const Napi::CallbackInfo& info) {
    parser_ = pd3::ParserHandle();
    return info.Env().Undefined();
  }

  pd3::ParserHandle parser_;
};

// new NativeFlow(parser): one TCP flow's parser state.
class NativeFlow : public Napi::ObjectWrap<NativeFlow> {
 public:
  static void Init(Napi::Env env, Napi::Object exports) {
    Napi::Function cls = DefineClass(env, "NativeFlow",
                                     {InstanceMethod<&NativeFlow::ParseRequest>("parseRequest"),
                                      InstanceMethod<&NativeFlow::Resync>("resync"),
                                      InstanceMethod<&NativeFlow::Close>("close")});
    exports.Set("NativeFlow", cls);
  }

  explicit NativeFlow(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeFlow>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsObject() || !info[0].As<Napi::Object>().CheckTypeTag(&kParserTag))
      throw Napi::TypeError::New(env, "NativeFlow(parser: NativeParser)");
    const NativeParser* parser = NativeParser::Unwrap(info[0].As<Napi::Object>());
    if (const int rc = pd3::ParserFlow::open(parser->handle(env), &flow_)) throw_status(env, rc, "openFlow");
  }

 private:
  // parseRequest(bytes): {accesses: [{key: Buffer, op}], consumed} for every complete request, or
  // null when the bytes at the start are not a request of the protocol.
  Napi::Value ParseRequest(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const Bytes in = bytes_arg(info, 0, "bytes");
    Napi::Array list = Napi::Array::New(env);
    uint32_t listed = 0;
    size_t off = 0;
    out_.resize(kAccessBatch);
    while (off < in.size) {
      uint32_t n = 0;
      size_t consumed = 0;
      const int rc = flow_.parse_request(in.data + off, in.size - off, out_.data(), kAccessBatch, &n, &consumed);
      if (rc == PD3_E_PROTOCOL) {
        if (off == 0) return env.Null();
        break;
      }
      if (rc < 0) throw_status(env, rc, "parseRequest");
      for (uint32_t i = 0; i < n; ++i) {
        Napi::Object a = Napi::Object::New(env);
        a.Set("key", Napi::Buffer<uint8_t>::Copy(env, out_[i].key, out_[i].key_len));
        a.Set("op", out_[i].op);
        list.Set(listed++, a);
      }
      off += consumed;
      if (consumed == 0) break;
    }
    Napi::Object result = Napi::Object::New(env);
    result.Set("accesses", list);
    result.Set("consumed", double(off));
    return result;
  }

  // resync(bytes): offset of the first plausible request start, or -1.
  Napi::Value Resync(const Napi::CallbackInfo& info) {
    const Bytes in = bytes_arg(info, 0, "bytes");
    return Napi::Number::New(info.Env(), double(flow_.resync(in.data, in.size)));
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    flow_.close();
    return info.Env().Undefined();
  }

  pd3::ParserFlow flow_;
  std::vector<pd3_access> out_;
};

Napi::Object parser_constants(Napi::Env env) {
  Napi::Object c = Napi::Object::New(env);
  auto num = [&](const char* name, double v) { c.Set(name, Napi::Number::New(env, v)); };
  num("ABI_VERSION", PD3_PARSER_ABI_VERSION);
  num("ACCESS_READ", PD3_ACCESS_READ);
  num("ACCESS_WRITE", PD3_ACCESS_WRITE);
  num("ACCESS_DELETE", PD3_ACCESS_DELETE);
  num("MIN_ACCESSES", PD3_PARSER_MIN_ACCESSES);
  num("BIN_MAGIC", PD3_BIN_MAGIC);
  num("BIN_GET", PD3_BIN_GET);
  num("BIN_PUT", PD3_BIN_PUT);
  num("BIN_DEL", PD3_BIN_DEL);
  num("BIN_MAX_REQUEST", PD3_BIN_MAX_REQUEST);
  num("SIZEOF_BIN_HEADER", sizeof(pd3_bin_header));
  return c;
}

}  // namespace

void init_parsers(Napi::Env env, Napi::Object exports) {
  NativeParser::Init(env, exports);
  NativeFlow::Init(env, exports);
  exports.Set("parserConstants", parser_constants(env));
}

}  // namespace pd3addon
