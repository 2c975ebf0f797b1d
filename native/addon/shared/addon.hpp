// addon.hpp — what the binding files of every addon share (thin wrappers, no logic). Each part has
// its own addon (host, agent, memserver, parsers), built from its folder plus this one.
#pragma once

#include <napi.h>

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "common/log_queue.hpp"

namespace pd3addon {

// The constants object (constants.cpp).
Napi::Object constants(Napi::Env env);

// One addon's exports: the constants, then the bindings each `init` registers. Every addon's module
// entry is this call with its own list.
using InitBindings = void (*)(Napi::Env env, Napi::Object exports);
Napi::Object export_part(Napi::Env env, Napi::Object exports, std::initializer_list<InitBindings> inits);

// Register binding classes on `exports` (each defined in its addon's folder).
void init_host(Napi::Env env, Napi::Object exports);
void init_agent(Napi::Env env, Napi::Object exports);
void init_host_view(Napi::Env env, Napi::Object exports);
void init_engine(Napi::Env env, Napi::Object exports);
void init_memserver(Napi::Env env, Napi::Object exports);
void init_transport_client(Napi::Env env, Napi::Object exports);
void init_parsers(Napi::Env env, Napi::Object exports);

// Throws a JS Error with .code = status name and .status = the negative code, message from
// pd3_last_error() when it has one.
[[noreturn]] void throw_status(Napi::Env env, int status, const char* what);

// Bytes of a Uint8Array (or Buffer) argument; throws TypeError otherwise.
struct Bytes {
  uint8_t* data;
  size_t size;
};
Bytes bytes_arg(const Napi::CallbackInfo& info, size_t index, const char* name);

// A uint32 argument in [0, max]; throws RangeError otherwise.
uint32_t u32_arg(const Napi::CallbackInfo& info, size_t index, const char* name, uint64_t max = 0xFFFFFFFFull);

// {events: [{level, event, message}], dropped}: the JS form of log events taken from a LogQueue.
Napi::Object log_events(Napi::Env env, const std::vector<pd3::LogEvent>& events, uint64_t dropped);

}  // namespace pd3addon
