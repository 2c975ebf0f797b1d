// host_addon.cpp — pd3_host.node, the host library's addon: the constants, the Loading Zone key
// hash and the host handle. It links the host library alone (no agent, memory server or parser).
#include "shared/addon.hpp"
#include "pd3/host.h"
#include "pd3/wire.h"

namespace {

using namespace pd3addon;

// lzKeyHash(key: Uint8Array): number — the Loading Zone index hash, for the TS port's test.
Napi::Value lz_key_hash(const Napi::CallbackInfo& info) {
  const Bytes key = bytes_arg(info, 0, "key");
  return Napi::Number::New(info.Env(), pd3_lz_key_hash(key.data, uint32_t(key.size)));
}

void init_key_hash(Napi::Env env, Napi::Object exports) {
  exports.Set("lzKeyHash", Napi::Function::New(env, lz_key_hash, "lzKeyHash"));
  // pd3/host.h's bound on pd3_host_config.publish_batch (TS publishBatch).
  exports.Set("maxPublishBatch", Napi::Number::New(env, PD3_MAX_PUBLISH_BATCH));
}

Napi::Object init_module(Napi::Env env, Napi::Object exports) {
  return export_part(env, exports, {init_key_hash, init_host});
}

}  // namespace

NODE_API_MODULE(pd3_host, init_module)
