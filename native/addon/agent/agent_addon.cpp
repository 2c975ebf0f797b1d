// agent_addon.cpp — pd3_agent.node, the DPU agent's addon: the constants, the agent's side of the
// segment, the Host View and the Transfer Engine (with its mirror, parsers and prefetcher).
#include "shared/addon.hpp"

namespace {

using namespace pd3addon;

Napi::Object init_module(Napi::Env env, Napi::Object exports) {
  exports.Set("constants", constants(env));
  init_agent(env, exports);
  init_host_view(env, exports);
  init_engine(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(pd3_agent, init_module)
