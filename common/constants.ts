// constants.ts — the type of the wire and layout constants every addon exports from
// native/include/pd3/*.h (native/addon/common/constants.cpp), so TS never copies a number.

/** Wire and layout constants, exported by the addon from native/include/pd3/*.h. */
export interface NativeConstants {
  readonly OP_READ: number;
  readonly OP_WRITE: number;
  readonly OP_PREFETCH: number;
  readonly OP_CONTROL: number;
  readonly CTL_ALLOCATE: number;
  readonly CTL_DEALLOCATE: number;
  readonly CTL_STATS: number;
  /** Hot-region migration's CONTROL sub-ops (pd3/wire.h): freeze, seal and thaw a region. */
  readonly CTL_FREEZE: number;
  readonly CTL_SEAL: number;
  readonly CTL_THAW: number;
  /** CTL_THAW's `size` that thaws a frozen region only (pd3/wire.h). */
  readonly THAW_IF_FROZEN: number;
  readonly ID_BITS: number;
  readonly ID_MASK: number;
  readonly MAX_INFLIGHT: number;
  readonly LZ_FREE: number;
  readonly LZ_PRODUCED: number;
  readonly LZ_CONSUMED: number;
  readonly LZ_INVALID: number;
  readonly LZ_STATE_BITS: number;
  readonly MAX_KEY_LEN: number;
  readonly MAX_ITEM_SIZE: number;
  readonly LAYOUT_VERSION: number;
  readonly CONTROL_SIZE: number;
  readonly RING_MIN_BYTES: number;
  readonly RING_MAX_BYTES: number;
  readonly LZ_MIN_ITEMS: number;
  readonly LZ_MAX_ITEMS: number;
  readonly DEFAULT_REQUEST_RING_BYTES: number;
  readonly DEFAULT_RESPONSE_RING_BYTES: number;
  readonly DEFAULT_LZ_DATA_BYTES: number;
  readonly DEFAULT_LZ_ITEMS: number;
  readonly DEFAULT_AGENT_TIMEOUT_MS: number;
  readonly SLOT_ALIGN: number;
  readonly SIZEOF_SLOT: number;
  /** pd3_slot kinds, the offset of its record count, and the alignment of records in a batch slot. */
  readonly SLOT_RECORD: number;
  readonly SLOT_RECORDS: number;
  readonly SLOT_PAD: number;
  readonly SLOT_COUNT: number;
  readonly RECORD_ALIGN: number;
  readonly SLOT_MAX_RECORDS: number;
  /** pd3_request (pd3/wire.h): its size and field offsets. */
  readonly SIZEOF_REQUEST: number;
  readonly REQUEST_OP_ID: number;
  readonly REQUEST_RESERVED: number;
  readonly REQUEST_REGION: number;
  readonly REQUEST_OFFSET: number;
  readonly REQUEST_SIZE: number;
  /** pd3_alloc_reply (pd3/wire.h): the data of a successful ALLOCATE. */
  readonly SIZEOF_ALLOC_REPLY: number;
  readonly ALLOC_REPLY_REGION: number;
  readonly ALLOC_REPLY_CAPACITY: number;
  readonly SIZEOF_RESPONSE: number;
  readonly SIZEOF_LZ_RECORD: number;
  readonly SIZEOF_LZ_DESC: number;
  readonly LZ_DESC_STATE: number;
  readonly LZ_DESC_NEXT_SEQ: number;
  readonly LZ_DESC_DATA_POS: number;
  readonly LZ_DESC_KEY_HASH: number;
  readonly LZ_DESC_RECORD_LEN: number;
  readonly LZ_RECORD_SEQ: number;
  readonly LZ_RECORD_OP_ID: number;
  readonly LZ_RECORD_KEY_LEN: number;
  readonly LZ_RECORD_SIZE: number;
  /** Built-in key/value record format (pd3/record.h). */
  readonly SIZEOF_KV_HEADER: number;
  readonly KV_KEY_LEN: number;
  readonly KV_VALUE_LEN: number;
  /** Transport protocol (pd3/transport.h). */
  readonly TRANSPORT_MAGIC: number;
  readonly TRANSPORT_VERSION: number;
  /** Offset of pd3_hello.flags, and its one flag: responses may come in any order. */
  readonly HELLO_FLAGS: number;
  readonly HELLO_ANY_ORDER: number;
  readonly FRAME_HELLO: number;
  readonly FRAME_HELLO_REPLY: number;
  readonly FRAME_REQUEST: number;
  readonly FRAME_RESPONSE: number;
  readonly FRAME_MAX_DEFAULT: number;
  readonly FRAME_MAX_LIMIT: number;
  readonly SIZEOF_FRAME: number;
  readonly SIZEOF_HELLO: number;
  readonly SIZEOF_HELLO_REPLY: number;
  readonly TOKEN_MAX: number;
  readonly TENANT_MAX: number;
  readonly TENANT_CREDENTIAL_LEN: number;
  /** What a tenant credential's HMAC covers before the tenant name (pd3/transport.h). */
  readonly TENANT_CREDENTIAL_CONTEXT: string;
  /** Region ids (pd3/transport.h): server:REGION_SERVER_BITS | local:REGION_LOCAL_BITS, 32 bits in
   *  all, so decode them with `>>>` (a region of a server id ≥ 32768 is ≥ 2^31). */
  readonly REGION_SERVER_BITS: number;
  readonly REGION_LOCAL_BITS: number;
  readonly MAX_SERVERS: number;
  readonly REGION_LOCAL_MAX: number;
  readonly SEGMENT_MAGIC: bigint;
  /** Status name → negative code, e.g. PD3_E_AGAIN → -1. */
  readonly status: Readonly<Record<string, number>>;
  /** Control-block field → byte offset. */
  readonly control: Readonly<Record<ControlField, number>>;
}

/** The largest memory server id, PD3_MAX_SERVERS - 1 (pd3/transport.h). Settings are checked
 *  before any addon is loaded (--help must work without one), so this one number is mirrored
 *  here; test/wire.test.ts checks it against the addon's MAX_SERVERS. */
export const MAX_SERVER_ID = 65_535;
/** PD3_REGION_LOCAL_BITS, mirrored for the same reason (a membership record's hot regions are
 *  checked against its server id without an addon); test/wire.test.ts checks it too. */
export const REGION_LOCAL_BITS = 16;

export type ControlField =
  | 'magic' | 'layout_version' | 'control_size' | 'segment_size' | 'req_offset' | 'req_size'
  | 'resp_offset' | 'resp_size' | 'lz_desc_offset' | 'lz_bucket_offset' | 'lz_data_offset'
  | 'lz_data_size' | 'lz_desc_count' | 'lz_bucket_count' | 'creator_pid' | 'created_unix_ns'
  | 'seal_salt' | 'agent_heartbeat_ns' | 'agent_pid' | 'agent_attaches' | 'agent_fence_ack'
  | 'req_tail' | 'req_head'
  | 'resp_tail' | 'resp_head' | 'lz_tail_seq' | 'lz_head_seq' | 'lz_data_tail' | 'lz_data_head'
  | 'host_requests' | 'host_ring_full' | 'host_responses' | 'host_mr_hits' | 'host_mr_misses'
  | 'host_mr_registrations' | 'host_mr_pinned_bytes' | 'host_mr_failures' | 'agent_batches' | 'agent_requests'
  | 'agent_corrupt' | 'agent_responses' | 'lz_produced' | 'lz_consumed' | 'lz_reclaimed_unconsumed'
  | 'lz_invalidated' | 'req_fence' | 'agent_fenced' | 'host_sleeping' | 'host_doorbell' | 'host_wake_at';
