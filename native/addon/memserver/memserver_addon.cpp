// memserver_addon.cpp — pd3_memserver.node, the memory server's addon: the constants and the
// memory server handle (regions, key index, TCP server on its own thread).
#include "shared/addon.hpp"

namespace {

using namespace pd3addon;

Napi::Object init_module(Napi::Env env, Napi::Object exports) {
  exports.Set("constants", constants(env));
  init_memserver(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(pd3_memserver, init_module)
