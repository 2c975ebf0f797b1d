// native.ts — loads the host library's addon (pd3_host.node: the segment, the host C ABI and
// direct mode; nothing of the agent, the memory server or the parsers) and types its surface.
import { loadAddon } from '../common/addon.js';
import type { NativeConstants } from '../common/constants.js';
import { learnStatusNames } from '../common/errors.js';

/** Options of a new segment (pd3_host_config of pd3/host.h). */
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
  directTenant?: string;
  directTimeoutMs?: number;
  directPlacement?: PlacementPolicy;
  directRefractionMs?: number;
  publishBatch?: number;
  directMrCacheBytes?: number;
  directUnregistered?: boolean;
}

/** Where a new region goes: pd3/host.h PD3_PLACEMENT_* by name. */
export type PlacementPolicy = 'p2c' | 'most-free' | 'random';

/** One pd3_host handle (native/addon/host/host_binding.cpp). Issuing methods return an id or a negative status. */
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
  /** pd3_host_set_direct_member; throws a Pd3Error with its status and reason. */
  setDirectMember(address: string, member: boolean): void;
  close(): void;
}

interface HostAddon {
  constants: NativeConstants;
  lzKeyHash(key: Uint8Array): number;
  maxPublishBatch: number;
  HostHandle: new (mode: 'create' | 'attach', options: NativeCreateOptions | string) => NativeHostHandle;
}

/** The loaded addon. */
export const addon: HostAddon = loadAddon<HostAddon>('pd3_host');
/** Every wire and layout constant, from the C headers. */
export const constants: NativeConstants = addon.constants;
learnStatusNames(constants.status);
/** pd3/host.h's PD3_MAX_PUBLISH_BATCH: the largest publishBatch. */
export const MAX_PUBLISH_BATCH: number = addon.maxPublishBatch;
