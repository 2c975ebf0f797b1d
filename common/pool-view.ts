// pool-view.ts — a pool client's view of the pool's membership (the agent's, or a direct-mode
// host's): which members are in the pool now, and which servers it has a link to. Each change of a
// record (put, delete, or a whole list after etcd was out of reach) becomes what the client's data
// path must do (MemberSink) and what happened (MemberChange), for the logs and counters. No I/O:
// pool-watch.ts feeds it. docs/pool.md.
import type { MemberRecord } from './pool-record.js';

/** The data path's side of membership: the agent's NativeEngine.setMember, or a direct-mode
 *  host's Pd3Host.setDirectMember. */
export interface MemberSink {
  setMember(address: string, member: boolean): void;
}

/** What a change of records meant for one member. */
export interface MemberChange {
  /** left: its record is gone (no new region goes there); returned: a server the engine already
   *  serves is back in the pool; joined: a server new to this client (a link is opened to it). */
  readonly kind: 'left' | 'returned' | 'joined';
  readonly serverId: number;
  readonly address: string;
}

/** The members in the pool as this client last saw them. */
export class PoolView {
  private readonly members = new Map<number, MemberRecord>();  // by server id
  private readonly served = new Set<string>();  // addresses the engine has a link to

  /** `initial`: the members the engine was started with (each has a link). */
  constructor(
    initial: readonly MemberRecord[],
    private readonly sink: MemberSink,
  ) {
    for (const m of initial) {
      this.members.set(m.serverId, m);
      this.served.add(m.address);
    }
  }

  /** Members in the pool now. */
  get size(): number {
    return this.members.size;
  }

  /** A record was written: a refresh of a member (nothing to do), a member back, or a new one. */
  put(record: MemberRecord): MemberChange[] {
    const held = this.members.get(record.serverId);
    if (held !== undefined && held.address === record.address) {
      this.members.set(record.serverId, record);
      return [];
    }
    // A new address for this id (the server moved): the old one is not that member any more.
    const changes = held === undefined ? [] : [this.leave(held)];
    this.members.set(record.serverId, record);
    const kind = this.served.has(record.address) ? 'returned' : 'joined';
    this.served.add(record.address);
    this.sink.setMember(record.address, true);
    changes.push({ kind, serverId: record.serverId, address: record.address });
    return changes;
  }

  /** Server `serverId`'s record was deleted (lease ended or revoked). */
  delete(serverId: number): MemberChange[] {
    const held = this.members.get(serverId);
    return held === undefined ? [] : [this.leave(held)];
  }

  /** The whole membership as listed now (after an outage): applies what changed since. */
  reconcile(listed: readonly MemberRecord[]): MemberChange[] {
    const ids = new Set(listed.map((m) => m.serverId));
    const changes: MemberChange[] = [];
    for (const m of [...this.members.values()]) if (!ids.has(m.serverId)) changes.push(this.leave(m));
    for (const m of listed) changes.push(...this.put(m));
    return changes;
  }

  private leave(m: MemberRecord): MemberChange {
    this.members.delete(m.serverId);
    // Another id at the same address (a server restarted under a new id) keeps it placeable.
    if (![...this.members.values()].some((o) => o.address === m.address)) this.sink.setMember(m.address, false);
    return { kind: 'left', serverId: m.serverId, address: m.address };
  }
}
