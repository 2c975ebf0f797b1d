// native.ts — loads the memory server's addon (pd3_memserver.node: regions, the key index, the
// TCP server) and types its surface.
import { loadAddon } from '../common/addon.js';
import type { NativeConstants } from '../common/constants.js';
import { learnStatusNames } from '../common/errors.js';
import type { NativeLogEvent } from '../cli/log-pump.js';
import type { RegionAccesses } from './heat.js';
import type { EvictName, TierIoName, TierPrefetchName } from './tier-settings.js';

/** Options of a memory server (native/memserver, binding native/addon/memserver/memserver_binding.cpp). */
export interface NativeMemServerOptions {
  /** Address to listen on (IPv4), e.g. "127.0.0.1". */
  host: string;
  /** Port to listen on; 0 picks a free one (see port()). */
  port: number;
  /** 0..65535: the top 16 bits of every region id this server hands out. */
  serverId: number;
  /** Auth token every client must present in its hello. */
  token: string;
  /** Bytes offered in total; 0 or absent = what the machine can spare minus the headroom. */
  capacity?: number;
  /** Fraction of available memory kept free when capacity is 0 (default 0.15). */
  headroom?: number;
  /** 'on' (default) or 'off': give cold regions back under memory pressure (with a dataDir). */
  giveBack?: 'on' | 'off';
  /** Where MemTotal and MemAvailable are read (default /proc/meminfo). */
  meminfo?: string;
  /** How often memory pressure is checked (default 1000 ms; 0 never). */
  pressureCheckMs?: number;
  /** Directory of per-region backing files and the index; absent = anonymous memory. */
  dataDir?: string;
  /** Durability of acknowledged writes with a dataDir (default 'batch'). */
  sync?: 'none' | 'batch';
  /** With dataDir: bytes of DRAM frames of the SSD tier (docs/tier.md); absent or 0 = no tier. */
  dramBudget?: number;
  /** The tier's page size, a power of two in 4K..2M (default 64K). */
  pageSize?: number;
  /** The tier's eviction policy (default 'lru'). */
  evict?: EvictName;
  /** The tier's prefetcher (default 'none'). */
  tierPrefetch?: TierPrefetchName;
  /** The tier's I/O backend; absent: io_uring, or threads where the kernel refuses io_uring. */
  tierIo?: TierIoName;
  /** Bytes of the registration cache of the tier's frames (MRRC); absent: the DRAM budget; 0: none. */
  mrCache?: number;
  /** Largest frame accepted (default PD3_FRAME_MAX_DEFAULT). */
  maxFrame?: number;
  /** Most client connections at once (default 64). */
  maxConnections?: number;
  /** Records of a frame hinted into the cache ahead of the one running (default 8; 0: none; at most MAX_WARM_AHEAD). */
  warmAhead?: number;
  /** Initial key→address index capacity (it grows by doubling). */
  indexInitialKeys?: number;
  /** How the index reads records: "builtin" (default), "resp", "binary", or a parser library's path or name. */
  recordParser?: string;
}

/** What one tenant holds on a memory server. */
export interface TenantUsage {
  tenant: string;
  regions: number;
  bytes: number;
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
  /** Regions and bytes of every tenant holding a region ('' is the default tenant). */
  tenants(): TenantUsage[];
  /** Every region's access count and move state (refreshed by the server thread at most every 100 ms). */
  regionHeat(): RegionAccesses[];
  /** Frees every region of `tenant` on the server's thread; returns at once (tenant.reclaimed is logged). */
  reclaimTenant(tenant: string): void;
  /** Stops the thread and closes every connection; idempotent. */
  close(): void;
}

/** A native client's answer to one request: status 0 (ok) or a negative pd3_status, and the data. */
export interface TransportReply {
  status: number;
  data: Buffer;
}

/** A client connection to a memory server (native/memserver/sync_client.hpp), each call run on
 *  the thread pool, one at a time, within the connect timeout. For the region migrator only. */
export interface NativeTransportClient {
  /** Connects and says hello; rejects with an error carrying `status` on failure. */
  connect(address: string, token: string, tenant: string, timeoutMs: number): Promise<void>;
  /** One READ / WRITE / CONTROL record; rejects (status-carrying) when no answer came. */
  request(op: number, region: number, offset: number, size: number, data?: Uint8Array): Promise<TransportReply>;
  /** Most bytes one READ or WRITE may carry. */
  maxPayload(): number;
  /** Whether the connection is open (a failed call closes it). */
  connected(): boolean;
  /** Closes the connection; throws while a call is under way. */
  close(): void;
}

interface MemServerAddon {
  constants: NativeConstants;
  /** native/memserver/tcp_server.hpp's kMaxWarmAhead: the largest warmAhead. */
  maxWarmAhead: number;
  MemServerHandle: new (options: NativeMemServerOptions) => NativeMemServer;
  TransportClient: new () => NativeTransportClient;
}

/** The loaded addon. */
export const addon: MemServerAddon = loadAddon<MemServerAddon>('pd3_memserver');
/** Every wire and layout constant, from the C headers. */
export const constants: NativeConstants = addon.constants;
learnStatusNames(constants.status);
