// native.ts — loads the agent's addon (pd3_agent.node: the agent's side of the segment, the Host
// View, the Transfer Engine with its mirror and prefetcher) and types its surface.
import { loadAddon } from '../common/addon.js';
import type { NativeConstants } from '../common/constants.js';
import { learnStatusNames } from '../common/errors.js';
import type { NativeLogEvent } from '../cli/log-pump.js';
import type { Parser } from '../parsers/index.js';

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

/** One pd3::AgentSession (native/addon/agent/agent_binding.cpp). */
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

/** One sharded Host View (native/addon/agent/host_view_binding.cpp). */
export interface NativeHostView {
  lookup(hashes: BigUint64Array): Uint8Array;
  insert(hashes: BigUint64Array): Uint8Array;
  erase(hashes: BigUint64Array): Uint8Array;
  info(): { size: number; bytes: number; shards: number; simd: string; pages: string };
  close(): void;
}

/** Options of a Transfer Engine (native/dpu/transfer_engine.hpp, EngineOptions). */
export interface NativeEngineOptions {
  segment: string;
  /** "host:port" of each memory server. */
  servers: string[];
  token: string;
  /** The tenant the engine's connections act for; absent: the default tenant. */
  tenant?: string;
  maxBatchRecords?: number;
  maxBatchBytes?: number;
  batchDelayUs?: number;
  maxOutstanding?: number;
  responseBufferBytes?: number;
  requestTimeoutMs?: number;
  connectTimeoutMs?: number;
  reconnectMs?: number;
  idleSpinUs?: number;
  /** ns per DMA operation: the latency-and-accounting backend (0..1e6); absent: shared memory. */
  dmaLatencyNs?: number;
  idleSleepUs?: number;
  idleSleepMaxUs?: number;
  /** Where ALLOCATE goes: "p2c" (default), "most-free" or "random" (native/dpu/placement.hpp). */
  placement?: 'p2c' | 'most-free' | 'random';
  /** How long a server that answered NOSPACE is skipped (default 1000). */
  refractionMs?: number;
  hostView?: boolean;
  hostViewCapacity?: number;
  hostViewShards?: number;
  hostViewSpinUs?: number;
  /** DPU-direct prefetching (native/dpu/prefetch_path.hpp); absent: off. */
  prefetch?: {
    parser: string;
    backend: 'afpacket' | 'tee' | 'dpdk';
    /** "host:port" of the app. */
    app: string;
    /** tee only: "host:port" clients connect to. */
    listen?: string;
    interface?: string;
    /** afpacket: the receive ring (packet_mirror.hpp MirrorRing); absent: v2. */
    ring?: 'v2' | 'v3';
    /** afpacket: µs the capture thread spins on an empty ring before sleeping (0-1000); absent: 0. */
    spinUs?: number;
    /** afpacket: the capture thread's scheduler slice in µs (0: the kernel's default); absent: 100. */
    sliceUs?: number;
    /** backend "dpdk": the DPDK port and its thread (native/dpu/dpdk_mirror.hpp, DpdkMirrorOptions). */
    dpdk?: NativeDpdkOptions;
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

/** The DPDK capture backend's options; absent keys take the native defaults. */
export interface NativeDpdkOptions {
  /** EAL arguments separated by spaces. */
  ealArgs?: string;
  /** A port id, a port name, or a vdev to plug in ("net_af_packet0,iface=m1"). */
  port?: string;
  mbufs?: number;
  mbufBytes?: number;
  burst?: number;
  spinUs?: number;
  sleepMinUs?: number;
  sleepMaxUs?: number;
  promiscuous?: boolean;
}

/** One memory server as the engine sees it. */
export interface NativeServerState {
  endpoint: string;
  connected: boolean;
  serverId: number;
  capacity: number;
  freeBytes: number;
  /** New regions may go there: false while the server is out of the pool (--etcd). */
  placeable: boolean;
  lastError: string;
}

/** A running Transfer Engine (binding native/addon/agent/engine_binding.cpp). */
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
  /** The pool's membership changed: `member` false, the server at `address` ("host:port") left,
   *  and gets no new region (its existing ones are still served while it answers); true, it is in
   *  the pool, placeable again, or connected to first if the engine has no link to it. Applied by
   *  the engine thread within a millisecond. */
  setMember(address: string, member: boolean): void;
  /** Parses up to `max` captured flow events on this thread; returns how many. */
  pumpFlows(max?: number): number;
  /** Stops the engine thread and detaches; idempotent. */
  close(): void;
}

interface AgentAddon {
  constants: NativeConstants;
  AgentHandle: new (name: string, dmaLatencyNs?: number) => NativeAgentHandle;
  HostViewHandle: new (options: NativeHostViewOptions) => NativeHostView;
  hostViewKeyHash(key: Uint8Array): bigint;
  EngineHandle: new (options: NativeEngineOptions) => NativeEngine;
  /** Whether this build has the DPDK capture backend (--mirror dpdk). */
  dpdkBuiltIn: boolean;
}

/** The loaded addon. */
export const addon: AgentAddon = loadAddon<AgentAddon>('pd3_agent');
/** Every wire and layout constant, from the C headers. */
export const constants: NativeConstants = addon.constants;
learnStatusNames(constants.status);
