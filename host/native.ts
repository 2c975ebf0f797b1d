// native.ts — loads the pd3 addon once and types its surface (the thin bindings in native/addon).
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { Parser } from '../parsers/index.js';

/** Wire and layout constants, exported by the addon from native/include/pd3/*.h. */
export interface NativeConstants {
  readonly OP_READ: number;
  readonly OP_WRITE: number;
  readonly OP_PREFETCH: number;
  readonly OP_CONTROL: number;
  readonly CTL_ALLOCATE: number;
  readonly CTL_DEALLOCATE: number;
  readonly CTL_STATS: number;
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
  readonly SIZEOF_REQUEST: number;
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
  readonly REGION_SERVER_BITS: number;
  readonly REGION_LOCAL_BITS: number;
  readonly MAX_SERVERS: number;
  readonly SEGMENT_MAGIC: bigint;
  /** Status name → negative code, e.g. PD3_E_AGAIN → -1. */
  readonly status: Readonly<Record<string, number>>;
  /** Control-block field → byte offset. */
  readonly control: Readonly<Record<ControlField, number>>;
}

export type ControlField =
  | 'magic' | 'layout_version' | 'control_size' | 'segment_size' | 'req_offset' | 'req_size'
  | 'resp_offset' | 'resp_size' | 'lz_desc_offset' | 'lz_bucket_offset' | 'lz_data_offset'
  | 'lz_data_size' | 'lz_desc_count' | 'lz_bucket_count' | 'creator_pid' | 'created_unix_ns'
  | 'seal_salt' | 'agent_heartbeat_ns' | 'agent_pid' | 'agent_attaches' | 'agent_fence_ack'
  | 'req_tail' | 'req_head'
  | 'resp_tail' | 'resp_head' | 'lz_tail_seq' | 'lz_head_seq' | 'lz_data_tail' | 'lz_data_head'
  | 'host_requests' | 'host_ring_full' | 'host_responses' | 'agent_batches' | 'agent_requests'
  | 'agent_corrupt' | 'agent_responses' | 'lz_produced' | 'lz_consumed' | 'lz_reclaimed_unconsumed'
  | 'lz_invalidated' | 'req_fence' | 'agent_fenced';

export interface NativeCreateOptions {
  name: string;
  requestRingBytes?: number;
  responseRingBytes?: number;
  lzDataBytes?: number;
  lzItems?: number;
  agentTimeoutMs?: number;
  replace?: boolean;
  fallback?: 'fail' | 'direct';
  directOnly?: boolean;
  directServers?: string;
  directToken?: string;
  directTimeoutMs?: number;
}

/** One pd3_host handle (native/addon/host_binding.cpp). Issuing methods return an id or a negative status. */
export interface NativeHostHandle {
  allocate(bytes: number, userData: number): number;
  deallocate(region: number, userData: number): number;
  read(region: number, offset: number, dest: Uint8Array, userData: number): number;
  write(region: number, offset: number, data: Uint8Array, userData: number): number;
  /** Fills [userData, status, size, id, op, region] per completion; returns how many. */
  poll(out: Float64Array): number;
  checkAndReturn(key: Uint8Array, dest: Uint8Array): number;
  agentAlive(): boolean;
  inflight(): number;
  segmentBuffer(): ArrayBuffer;
  close(): void;
}

/** One request as the agent takes it from the ring. */
export interface NativeRequest {
  opId: number;
  op: number;
  id: number;
  region: number;
  offset: number;
  size: number;
  payload: Buffer;
  /** 0, or a negative status the agent must answer with (malformed record). */
  status: number;
}

/** One pd3::AgentSession (native/addon/agent_binding.cpp). */
export interface NativeAgentHandle {
  beat(): void;
  takeRequests(max?: number): NativeRequest[];
  respond(opId: number, status: number, data?: Uint8Array | number): number;
  produce(opId: number, key: Uint8Array, data: Uint8Array): number;
  clean(): number;
  invalidate(key: Uint8Array): number;
  pending(): number;
  close(): void;
}

/** Options of a Host View (native/dpu/host_view.hpp). */
export interface NativeHostViewOptions {
  capacity: number;
  shards?: number;
  maxLoad?: number;
  simd?: 'best' | 'scalar' | 'sse4.1' | 'avx2' | 'neon';
  hugePages?: boolean;
  batched?: boolean;
  delayedSecond?: boolean;
  batch?: number;
}

/** One sharded Host View (native/addon/host_view_binding.cpp). */
export interface NativeHostView {
  lookup(hashes: BigUint64Array): Uint8Array;
  insert(hashes: BigUint64Array): Uint8Array;
  erase(hashes: BigUint64Array): Uint8Array;
  info(): { size: number; bytes: number; shards: number; simd: string; pages: string };
  close(): void;
}

/** One structured log event from a native component (native/common/log_queue.hpp). */
export interface NativeLogEvent {
  level: 'debug' | 'info' | 'warn' | 'error';
  event: string;
  message: string;
}

/** Options of a memory server (native/memserver, binding native/addon/memserver_binding.cpp). */
export interface NativeMemServerOptions {
  /** Address to listen on (IPv4), e.g. "127.0.0.1". */
  host: string;
  /** Port to listen on; 0 picks a free one (see port()). */
  port: number;
  /** 0..15: the top bits of every region id this server hands out. */
  serverId: number;
  /** Auth token every client must present in its hello. */
  token: string;
  /** Bytes offered in total; 0 or absent = what the machine can spare minus the headroom. */
  capacity?: number;
  /** Fraction of available memory kept free when capacity is 0 (default 0.15). */
  headroom?: number;
  /** Directory of per-region backing files and the index; absent = anonymous memory. */
  dataDir?: string;
  /** Durability of acknowledged writes with a dataDir (default 'batch'). */
  sync?: 'none' | 'batch';
  /** Largest frame accepted (default PD3_FRAME_MAX_DEFAULT). */
  maxFrame?: number;
  /** Most client connections at once (default 64). */
  maxConnections?: number;
  /** Initial key→address index capacity (it grows by doubling). */
  indexInitialKeys?: number;
  /** How the index reads records: "builtin" (default), "resp", "binary", or a parser library's path or name. */
  recordParser?: string;
}

/** A running memory server: its own native event-loop thread. */
export interface NativeMemServer {
  /** The port it listens on. */
  port(): number;
  /** Counters and gauges (names as in docs/memserver.md). */
  stats(): Record<string, number>;
  /** Request frames by records per frame: counts for ≤1, ≤2, ≤4, … ≤4096, then more. */
  batchHistogram(): number[];
  /** "builtin", or the plug-in parser's name (from its pd3_parser table). */
  recordParser(): string;
  /** Log events since the last call; `dropped` counts events lost to a full queue. */
  takeLogs(): { events: NativeLogEvent[]; dropped: number };
  /** Stops the thread and closes every connection; idempotent. */
  close(): void;
}

/** Options of a Transfer Engine (native/dpu/transfer_engine.hpp, EngineOptions). */
export interface NativeEngineOptions {
  segment: string;
  /** "host:port" of each memory server. */
  servers: string[];
  token: string;
  maxBatchRecords?: number;
  maxBatchBytes?: number;
  batchDelayUs?: number;
  maxOutstanding?: number;
  responseBufferBytes?: number;
  requestTimeoutMs?: number;
  connectTimeoutMs?: number;
  reconnectMs?: number;
  idleSpinUs?: number;
  idleSleepUs?: number;
  idleSleepMaxUs?: number;
  hostView?: boolean;
  hostViewCapacity?: number;
  hostViewShards?: number;
  /** DPU-direct prefetching (native/dpu/prefetch_path.hpp); absent: off. */
  prefetch?: {
    parser: string;
    backend: 'afpacket' | 'tee';
    /** "host:port" of the app. */
    app: string;
    /** tee only: "host:port" clients connect to. */
    listen?: string;
    interface?: string;
    /** Who sends each prefetch: the agent (DPU-direct, default) or the host after a hint (§6.2). */
    issuer?: 'agent' | 'host';
    /** issuer "host": a hint the host has not returned by then is given up. */
    hintTimeoutMs?: number;
    /** The parser is a TS one, attached with attachParser() (`parser` is then its name, for logs). */
    external?: boolean;
    maxInflight?: number;
    maxItemBytes?: number;
  };
}

/** One memory server as the engine sees it. */
export interface NativeServerState {
  endpoint: string;
  connected: boolean;
  serverId: number;
  capacity: number;
  freeBytes: number;
  lastError: string;
}

/** A running Transfer Engine (binding native/addon/engine_binding.cpp). */
export interface NativeEngine {
  /** EngineStats fields, snake_case as in the C++ struct. */
  stats(): Record<string, number>;
  servers(): NativeServerState[];
  takeLogs(): { events: NativeLogEvent[]; dropped: number };
  /** The tee proxy's port when prefetching uses the tee backend, else 0. */
  teePort(): number;
  /** With prefetch.external: runs this TS parser on the JS thread and starts capturing;
   *  onFlowEvents is called when captured flow events wait for pumpFlows(). Once. */
  attachParser(parser: Parser, onFlowEvents: () => void): void;
  /** Parses up to `max` captured flow events on this thread; returns how many. */
  pumpFlows(max?: number): number;
  /** Stops the engine thread and detaches; idempotent. */
  close(): void;
}

interface Addon {
  constants: NativeConstants;
  lzKeyHash(key: Uint8Array): number;
  HostHandle: new (mode: 'create' | 'attach', options: NativeCreateOptions | string) => NativeHostHandle;
  AgentHandle: new (name: string) => NativeAgentHandle;
  HostViewHandle: new (options: NativeHostViewOptions) => NativeHostView;
  hostViewKeyHash(key: Uint8Array): bigint;
  MemServerHandle: new (options: NativeMemServerOptions) => NativeMemServer;
  EngineHandle: new (options: NativeEngineOptions) => NativeEngine;
}

const require = createRequire(import.meta.url);
const addonPath =
  process.env.PD3_ADDON_PATH ?? fileURLToPath(new URL('../../build/Release/pd3_addon.node', import.meta.url));

/** The loaded addon. */
export const addon: Addon = require(addonPath) as Addon;
/** Every wire and layout constant, from the C headers. */
export const constants: NativeConstants = addon.constants;
