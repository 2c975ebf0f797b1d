// agent_addon.cpp — pd3_agent.node, the DPU agent's addon: the constants, the agent's side of the
// segment, the Host View and the Transfer Engine (with its mirror, parsers and prefetcher).
#include "shared/addon.hpp"

namespace {

Napi::Object init_module(Napi::Env env, Napi::Object exports) {
  return pd3addon::export_part(env, exports, {pd3addon::init_agent, pd3addon::init_host_view, pd3addon::init_engine});
}

}  // namespace

NODE_API_MODULE(pd3_agent, init_module)
