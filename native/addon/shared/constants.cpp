// constants.cpp — exports every wire and layout constant to TS, so TS never copies a number.
#include <cstddef>

#include "shared/addon.hpp"
#include "pd3/record.h"
#include "pd3/segment.h"
#include "pd3/status.h"
#include "pd3/transport.h"
#include "pd3/wire.h"

namespace pd3addon {

namespace {

Napi::Object status_codes(Napi::Env env) {
  Napi::Object o = Napi::Object::New(env);
#define PD3_STATUS_EXPORT(name, value, text) o.Set(#name, Napi::Number::New(env, -(value)));
  PD3_STATUS_LIST(PD3_STATUS_EXPORT)
#undef PD3_STATUS_EXPORT
  return o;
}

Napi::Object control_offsets(Napi::Env env) {
  Napi::Object o = Napi::Object::New(env);
#define PD3_FIELD_EXPORT(f) o.Set(#f, Napi::Number::New(env, double(offsetof(pd3_control, f))));
  PD3_CONTROL_FIELDS(PD3_FIELD_EXPORT)
#undef PD3_FIELD_EXPORT
  return o;
}

}  // namespace

Napi::Object constants(Napi::Env env) {
  Napi::Object c = Napi::Object::New(env);
  auto num = [&](const char* name, double v) { c.Set(name, Napi::Number::New(env, v)); };
  num("OP_READ", PD3_OP_READ);
  num("OP_WRITE", PD3_OP_WRITE);
  num("OP_PREFETCH", PD3_OP_PREFETCH);
  num("OP_CONTROL", PD3_OP_CONTROL);
  num("CTL_ALLOCATE", PD3_CTL_ALLOCATE);
  num("CTL_DEALLOCATE", PD3_CTL_DEALLOCATE);
  num("CTL_STATS", PD3_CTL_STATS);
  num("CTL_FREEZE", PD3_CTL_FREEZE);
  num("CTL_SEAL", PD3_CTL_SEAL);
  num("CTL_THAW", PD3_CTL_THAW);
  num("THAW_IF_FROZEN", PD3_THAW_IF_FROZEN);
  num("ID_BITS", PD3_ID_BITS);
  num("ID_MASK", PD3_ID_MASK);
  num("MAX_INFLIGHT", PD3_MAX_INFLIGHT);
  num("LZ_FREE", PD3_LZ_FREE);
  num("LZ_PRODUCED", PD3_LZ_PRODUCED);
  num("LZ_CONSUMED", PD3_LZ_CONSUMED);
  num("LZ_INVALID", PD3_LZ_INVALID);
  num("LZ_STATE_BITS", PD3_LZ_STATE_BITS);
  num("MAX_KEY_LEN", PD3_MAX_KEY_LEN);
  num("MAX_ITEM_SIZE", PD3_MAX_ITEM_SIZE);
  num("LAYOUT_VERSION", PD3_LAYOUT_VERSION);
  num("CONTROL_SIZE", PD3_CONTROL_SIZE);
  num("RING_MIN_BYTES", double(PD3_RING_MIN_BYTES));
  num("RING_MAX_BYTES", double(PD3_RING_MAX_BYTES));
  num("LZ_MIN_ITEMS", PD3_LZ_MIN_ITEMS);
  num("LZ_MAX_ITEMS", PD3_LZ_MAX_ITEMS);
  num("DEFAULT_REQUEST_RING_BYTES", double(PD3_DEFAULT_REQUEST_RING_BYTES));
  num("DEFAULT_RESPONSE_RING_BYTES", double(PD3_DEFAULT_RESPONSE_RING_BYTES));
  num("DEFAULT_LZ_DATA_BYTES", double(PD3_DEFAULT_LZ_DATA_BYTES));
  num("DEFAULT_LZ_ITEMS", PD3_DEFAULT_LZ_ITEMS);
  num("DEFAULT_AGENT_TIMEOUT_MS", PD3_DEFAULT_AGENT_TIMEOUT_MS);
  num("SLOT_ALIGN", PD3_SLOT_ALIGN);
  num("SIZEOF_SLOT", sizeof(pd3_slot));
  num("SLOT_RECORD", PD3_SLOT_RECORD);
  num("SLOT_RECORDS", PD3_SLOT_RECORDS);
  num("SLOT_PAD", PD3_SLOT_PAD);
  num("SLOT_COUNT", offsetof(pd3_slot, count));
  num("RECORD_ALIGN", PD3_RECORD_ALIGN);
  num("SLOT_MAX_RECORDS", PD3_SLOT_MAX_RECORDS);
  num("SIZEOF_REQUEST", sizeof(pd3_request));
  num("REQUEST_OP_ID", offsetof(pd3_request, op_id));
  num("REQUEST_RESERVED", offsetof(pd3_request, reserved));
  num("REQUEST_REGION", offsetof(pd3_request, region));
  num("REQUEST_OFFSET", offsetof(pd3_request, offset));
  num("REQUEST_SIZE", offsetof(pd3_request, size));
  num("SIZEOF_ALLOC_REPLY", sizeof(pd3_alloc_reply));
  num("ALLOC_REPLY_REGION", offsetof(pd3_alloc_reply, region));
  num("ALLOC_REPLY_CAPACITY", offsetof(pd3_alloc_reply, capacity));
  num("SIZEOF_RESPONSE", sizeof(pd3_response));
  num("SIZEOF_LZ_RECORD", sizeof(pd3_lz_record));
  num("SIZEOF_LZ_DESC", sizeof(pd3_lz_desc));
  num("LZ_DESC_STATE", offsetof(pd3_lz_desc, state));
  num("LZ_DESC_NEXT_SEQ", offsetof(pd3_lz_desc, next_seq));
  num("LZ_DESC_DATA_POS", offsetof(pd3_lz_desc, data_pos));
  num("LZ_DESC_KEY_HASH", offsetof(pd3_lz_desc, key_hash));
  num("LZ_DESC_RECORD_LEN", offsetof(pd3_lz_desc, record_len));
  num("LZ_RECORD_SEQ", offsetof(pd3_lz_record, seq));
  num("LZ_RECORD_OP_ID", offsetof(pd3_lz_record, op_id));
  num("LZ_RECORD_KEY_LEN", offsetof(pd3_lz_record, key_len));
  num("LZ_RECORD_SIZE", offsetof(pd3_lz_record, size));
  num("SIZEOF_KV_HEADER", sizeof(pd3_kv_header));
  num("KV_KEY_LEN", offsetof(pd3_kv_header, key_len));
  num("KV_VALUE_LEN", offsetof(pd3_kv_header, value_len));
  num("TRANSPORT_MAGIC", PD3_TRANSPORT_MAGIC);
  num("TRANSPORT_VERSION", PD3_TRANSPORT_VERSION);
  num("HELLO_FLAGS", offsetof(pd3_hello, flags));
  num("HELLO_ANY_ORDER", PD3_HELLO_ANY_ORDER);
  num("FRAME_HELLO", PD3_FRAME_HELLO);
  num("FRAME_HELLO_REPLY", PD3_FRAME_HELLO_REPLY);
  num("FRAME_REQUEST", PD3_FRAME_REQUEST);
  num("FRAME_RESPONSE", PD3_FRAME_RESPONSE);
  num("FRAME_MAX_DEFAULT", PD3_FRAME_MAX_DEFAULT);
  num("FRAME_MAX_LIMIT", PD3_FRAME_MAX_LIMIT);
  num("SIZEOF_FRAME", sizeof(pd3_frame));
  num("SIZEOF_HELLO", sizeof(pd3_hello));
  num("SIZEOF_HELLO_REPLY", sizeof(pd3_hello_reply));
  num("TOKEN_MAX", PD3_TOKEN_MAX);
  num("TENANT_MAX", PD3_TENANT_MAX);
  num("TENANT_CREDENTIAL_LEN", PD3_TENANT_CREDENTIAL_LEN);
  c.Set("TENANT_CREDENTIAL_CONTEXT", Napi::String::New(env, PD3_TENANT_CREDENTIAL_CONTEXT));
  num("REGION_SERVER_BITS", PD3_REGION_SERVER_BITS);
  num("REGION_LOCAL_BITS", PD3_REGION_LOCAL_BITS);
  num("MAX_SERVERS", PD3_MAX_SERVERS);
  num("REGION_LOCAL_MAX", PD3_REGION_LOCAL_MAX);
  c.Set("SEGMENT_MAGIC", Napi::BigInt::New(env, uint64_t(PD3_SEGMENT_MAGIC)));
  c.Set("status", status_codes(env));
  c.Set("control", control_offsets(env));
  return c;
}

}  // namespace pd3addon
