// parsers_addon.cpp — pd3_parsers.node, the parsers' addon: the constants, the built-in native
// parsers (RESP, binary) and the plug-in loader of pd3/parser.h.
#include "shared/addon.hpp"

namespace {

Napi::Object init_module(Napi::Env env, Napi::Object exports) {
  return pd3addon::export_part(env, exports, {pd3addon::init_parsers});
}

}  // namespace

NODE_API_MODULE(pd3_parsers, init_module)
