// pd3-host.ts — Pd3Host: the host library for TS data systems (remote memory + checkAndReturn).
import { callNative, Pd3Error } from '../common/errors.js';
import { LoadingZoneReader } from './lz-reader.js';
import type { ControlField } from '../common/constants.js';
import { addon, constants as C, type NativeHostHandle, type PlacementPolicy } from './native.js';

/** Sizes and behaviour of a new host segment. Sizes left out take the defaults of segment.h. */
export interface Pd3HostOptions {
  /** Segment name: /dev/shm/<name>; 1-200 chars of [A-Za-z0-9._-]. */
  name: string;
  /** Request ring bytes (power of two). */
  requestRingBytes?: number;
  /** Response ring bytes (power of two). */
  responseRingBytes?: number;
  /** Loading Zone data ring bytes (power of two). */
  loadingZoneBytes?: number;
  /** Most Loading Zone items pending at once (power of two). */
  loadingZoneItems?: number;
  /** Heartbeat age after which the agent counts as down. */
  agentTimeoutMs?: number;
  /** Replace an existing segment of the same name (e.g. left by a crashed process). */
  replace?: boolean;
  /** checkAndReturn implementation; see docs/host-library.md for the measurements. */
  checkAndReturn?: CheckAndReturnImpl;
  /** While the agent is down: 'fail' (default) rejects with PD3_E_AGENT_DOWN; 'direct' sends
   *  requests to the memory servers directly (needs directServers). */
  fallback?: 'fail' | 'direct';
  /** Never use the agent: every request goes directly to the memory servers (the host-issued
   *  baseline of the transfer benchmark). */
  directOnly?: boolean;
  /** Memory servers for direct mode, as "host:port". */
  directServers?: string[];
  /** The memory servers' auth token, for direct mode: the cluster token, or with `directTenant`
   *  the tenant's credential (`pd3-memserver credential --tenant NAME`). */
  directToken?: string;
  /** Direct mode: the tenant this app is (default: the default tenant). Its connections reach only
   *  the tenant's own regions and keys (docs/pool.md "Tenants and credentials"). */
  directTenant?: string;
  /** Direct mode: connect + hello deadline (default 1000 ms). */
  directTimeoutMs?: number;
  /** Direct mode: where a new region goes (default 'p2c': of two servers drawn at random, the one
   *  with more free bytes; docs/pool.md "Placement"). */
  directPlacement?: PlacementPolicy;
  /** Direct mode: how long a server that answered PD3_E_NOSPACE gets no new region unless no other
   *  can take it (default 1000 ms). */
  directRefractionMs?: number;
  /** Requests staged before they are published without waiting for the pump's next poll
   *  (default 1: each at once; up to MAX_PUBLISH_BATCH, 4096): to the agent's ring, or in direct
   *  mode to the memory servers' connections. Staging publishes a batch with one ring reservation
   *  and one doorbell check (direct mode: one lock of its connections), which cuts the host's CPU
   *  per request (docs/host-library.md "Staging"). */
  publishBatch?: number;
  /** Direct mode: bytes each handle's registration cache (MRRC, docs/mrrc.md) may keep pinned for
   *  read destinations and write sources (default 4 MiB, capped to RLIMIT_MEMLOCK). Counters:
   *  stats().host_mr_*. */
  directMrCacheBytes?: number;
  /** Direct mode: register the caller's buffers (default true). An RDMA NIC needs them
   *  registered; the TCP transport of this build does not, so `false` skips the cache and its
   *  cost (docs/mrrc.md). */
  directRegistration?: boolean;
}

/** 'ts': pure TS over the mapped segment (default, faster); 'native': through N-API. */
export type CheckAndReturnImpl = 'ts' | 'native';

/** A region granted by allocate(). */
export interface AllocatedRegion {
  region: number;
  capacity: number;
}

/** Counters from the segment's control block. */
export type Pd3HostStats = Record<
  | 'host_requests' | 'host_ring_full' | 'host_responses' | 'host_mr_hits' | 'host_mr_misses'
  | 'host_mr_registrations' | 'host_mr_pinned_bytes' | 'host_mr_failures' | 'agent_batches' | 'agent_requests'
  | 'agent_corrupt' | 'agent_responses' | 'lz_produced' | 'lz_consumed' | 'lz_reclaimed_unconsumed'
  | 'lz_invalidated' | 'lz_pending' | 'agent_attaches' | 'agent_fenced' | 'req_fence',
  number
>;

// What a request was, which decides what its promise resolves with.
type RequestKind = 'allocate' | 'deallocate' | 'read' | 'write';

// One request between issue and completion.
interface Pending {
  kind: RequestKind;
  resolve: (value: never) => void;
  reject: (err: Error) => void;
  dest: Buffer | null;
}

const COMPLETION_FIELDS = 6;
const POLL_BATCH = 256;
// How long the pump keeps polling on setImmediate after the last completion before it falls back
// to a 1 ms timer: long enough to cover a round trip through the agent and the memory server
// (tens of µs), short enough not to spin the event loop when the agent is slow.
const SPIN_NS = 300_000n;

/** A handle on a host segment: remote memory through the PD3 agent, and checkAndReturn. */
export class Pd3Host {
  /** The segment's name as given to create() or attach(). */
  readonly name: string;
  /** Looks up a prefetched item: its size on a hit (data copied into dest), 0 on a miss. Never blocks. */
  readonly checkAndReturn: (key: Uint8Array, dest: Uint8Array) => number;

  private native: NativeHostHandle | null;
  private readonly segment: ArrayBuffer;
  private readonly pending = new Map<number, Pending>();
  private readonly completions = new Float64Array(POLL_BATCH * COMPLETION_FIELDS);
  private nextTag = 1;
  private pumpScheduled = false;
  private lastProgress = 0n;
  private pumpTimer: NodeJS.Timeout | null = null;  // the pump's slow timer, while it waits on one

  private constructor(name: string, native: NativeHostHandle, impl: CheckAndReturnImpl) {
    this.name = name;
    this.native = native;
    this.segment = native.segmentBuffer();
    if (impl === 'native') {
      this.checkAndReturn = (key, dest) => this.handle().checkAndReturn(key, dest);
    } else {
      const reader = new LoadingZoneReader(this.segment);
      this.checkAndReturn = (key, dest) => reader.checkAndReturn(key, dest);
    }
  }

  /** Creates the segment (the host owns it; the agent attaches by name). Throws Pd3Error. */
  static create(options: Pd3HostOptions): Pd3Host {
    const native = callNative(() => new addon.HostHandle('create', {
      name: options.name,
      requestRingBytes: options.requestRingBytes,
      responseRingBytes: options.responseRingBytes,
      lzDataBytes: options.loadingZoneBytes,
      lzItems: options.loadingZoneItems,
      agentTimeoutMs: options.agentTimeoutMs,
      replace: options.replace ?? false,
      fallback: options.fallback,
      directOnly: options.directOnly,
      directServers: options.directServers?.join(','),
      directToken: options.directToken,
      directTenant: options.directTenant,
      directTimeoutMs: options.directTimeoutMs,
      directPlacement: options.directPlacement,
      directRefractionMs: options.directRefractionMs,
      publishBatch: options.publishBatch,
      directMrCacheBytes: options.directMrCacheBytes,
      directUnregistered: options.directRegistration === false,
    }));
    return new Pd3Host(options.name, native, options.checkAndReturn ?? 'ts');
  }

  /** Opens another handle on an existing segment: from a worker_thread of the creating process it can
   *  do everything; from another process only checkAndReturn and stats. Throws Pd3Error. */
  static attach(name: string, options: { checkAndReturn?: CheckAndReturnImpl } = {}): Pd3Host {
    const native = callNative(() => new addon.HostHandle('attach', name));
    return new Pd3Host(name, native, options.checkAndReturn ?? 'ts');
  }

  /** Allocates a remote region of at least `bytes`. */
  allocate(bytes: number): Promise<AllocatedRegion> {
    return this.issue('allocate', null, (tag) => this.handle().allocate(bytes, tag));
  }

  /** Releases a region. */
  deallocate(region: number): Promise<void> {
    return this.issue('deallocate', null, (tag) => this.handle().deallocate(region, tag));
  }

  /** Reads `size` bytes at region:offset. */
  read(region: number, offset: number, size: number): Promise<Buffer> {
    const dest = Buffer.allocUnsafe(size);
    return this.issue('read', dest, (tag) => this.handle().read(region, offset, dest, tag));
  }

  /** Writes `data` at region:offset (a flush); resolves with the bytes written. The data is copied
   *  into the request ring (or the handle's staged batch) before this returns, so the caller may
   *  reuse it. */
  write(region: number, offset: number, data: Uint8Array): Promise<number> {
    return this.issue('write', null, (tag) => this.handle().write(region, offset, data, tag));
  }

  /** Completes every request whose response has arrived; returns how many. The pump calls this
   *  on its own while requests are in flight; call it directly to complete sooner. */
  poll(): number {
    const native = this.handle();
    let total = 0;
    for (;;) {
      const n = native.poll(this.completions);
      if (n < 0) {
        this.failAll(new Pd3Error(n, 'response ring is corrupt; recreate the segment'));
        return total;
      }
      for (let i = 0; i < n; ++i) this.complete(i * COMPLETION_FIELDS);
      total += n;
      if (n < POLL_BATCH) return total;
    }
  }

  /** True while the agent's heartbeat is fresh. */
  agentAlive(): boolean {
    return this.handle().agentAlive();
  }

  /** Direct mode in a pool: tells the direct path that the memory server at `address`
   *  ("host:port") is a member of the pool (`member` true) or has left it
   *  (pd3_host_set_direct_member). A server that left gets no new region; its regions are still
   *  served while it answers. PoolServers.follow calls it for each change it sees in etcd. Throws
   *  an Error whose `code` is the status's name: PD3_E_INVAL (not host:port, or the host has no
   *  directServers), PD3_E_NOSPACE (64 servers known, none of them left and unconnected). */
  setDirectMember(address: string, member: boolean): void {
    this.handle().setDirectMember(address, member);
  }

  /** Requests issued through this handle and not yet completed. */
  get inflight(): number {
    return this.pending.size;
  }

  /** Counters of the whole segment (host and agent sides). */
  stats(): Pd3HostStats {
    const view = new DataView(this.segment);
    const get = (f: ControlField): number => Number(view.getBigUint64(C.control[f], true));
    return {
      host_requests: get('host_requests'),
      host_ring_full: get('host_ring_full'),
      host_responses: get('host_responses'),
      host_mr_hits: get('host_mr_hits'),
      host_mr_misses: get('host_mr_misses'),
      host_mr_registrations: get('host_mr_registrations'),
      host_mr_pinned_bytes: get('host_mr_pinned_bytes'),
      host_mr_failures: get('host_mr_failures'),
      agent_batches: get('agent_batches'),
      agent_requests: get('agent_requests'),
      agent_corrupt: get('agent_corrupt'),
      agent_responses: get('agent_responses'),
      lz_produced: get('lz_produced'),
      lz_consumed: get('lz_consumed'),
      lz_reclaimed_unconsumed: get('lz_reclaimed_unconsumed'),
      lz_invalidated: get('lz_invalidated'),
      lz_pending: get('lz_tail_seq') - get('lz_head_seq'),
      agent_attaches: view.getUint32(C.control.agent_attaches, true),
      agent_fenced: get('agent_fenced'),
      req_fence: get('req_fence'),
    };
  }

  /** Closes the handle; requests still in flight are rejected with PD3_E_CLOSED. Closing the
   *  creating handle removes the segment's name. */
  close(): void {
    if (this.native === null) return;
    this.native.close();
    this.native = null;
    this.failAll(new Pd3Error(C.status.PD3_E_CLOSED!, 'host closed'));
  }

  private handle(): NativeHostHandle {
    if (this.native === null) throw new Pd3Error(C.status.PD3_E_CLOSED!, 'host closed');
    return this.native;
  }

  private issue<T>(kind: RequestKind, dest: Buffer | null, send: (tag: number) => number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const tag = this.nextTag++;
      const id = send(tag);
      if (id < 0) {
        reject(new Pd3Error(id)); // PD3_E_AGAIN is back-pressure: retry after responses drain
        return;
      }
      this.pending.set(tag, { kind, resolve: resolve as (v: never) => void, reject, dest });
      this.schedulePump();
    });
  }

  private complete(at: number): void {
    const c = this.completions;
    const tag = c[at]!;
    const status = c[at + 1]!;
    const size = c[at + 2]!;
    const region = c[at + 5]!;
    const p = this.pending.get(tag);
    if (p === undefined) return;
    this.pending.delete(tag);
    if (status !== 0) {
      p.reject(new Pd3Error(status));
      return;
    }
    switch (p.kind) {
      case 'read':
        (p.resolve as (v: Buffer) => void)(p.dest!.subarray(0, size));
        break;
      case 'write':
        (p.resolve as (v: number) => void)(size);
        break;
      case 'allocate':
        (p.resolve as (v: AllocatedRegion) => void)({ region, capacity: size });
        break;
      case 'deallocate':
        (p.resolve as (v: void) => void)();
        break;
    }
  }

  private failAll(err: Error): void {
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const p of all) p.reject(err);
  }

  private schedulePump(): void {
    // New work: poll eagerly again. A pump that had fallen back to the slow timer is brought
    // forward, or the new request would wait for that timer (up to a millisecond).
    this.lastProgress = process.hrtime.bigint();
    if (this.pumpTimer !== null) {
      clearTimeout(this.pumpTimer);
      this.pumpTimer = null;
      this.pumpScheduled = false;
    }
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    const tick = (): void => {
      this.pumpScheduled = false;
      this.pumpTimer = null;
      if (this.native === null) return;
      const now = process.hrtime.bigint();
      if (this.poll() > 0) this.lastProgress = now;
      if (this.pending.size === 0) return;
      this.pumpScheduled = true;
      if (now - this.lastProgress < SPIN_NS) setImmediate(tick);
      else this.pumpTimer = setTimeout(tick, 1);
    };
    setImmediate(tick);
  }
}

