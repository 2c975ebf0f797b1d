// memserver_addon.cpp — pd3_memserver.node, the memory server's addon: the constants and the
// memory server handle (regions, key index, TCP server on its own thread) and the migrator's client.
#include "shared/addon.hpp"

namespace {

Napi::Object init_module(Napi::Env env, Napi::Object exports) {
  return pd3addon::export_part(env, exports, {pd3addon::init_memserver, pd3addon::init_transport_client});
}

}  // namespace

NODE_API_MODULE(pd3_memserver, init_module)
