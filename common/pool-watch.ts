// pool-watch.ts — a client of the pool that follows its membership in etcd: the agent
// (pd3-agent --etcd) and a direct-mode host (PoolServers, host/pool-servers.ts). It lists the
// members at start, then watches PREFIX/members/ from that revision and hands each change to its
// sink (pool-view.ts): the agent's engine, or the host's direct path. When etcd is out of reach or
// the watch breaks, the client serves on with the last membership it knew, lists again once etcd
// answers and watches from there, so that members that left or joined meanwhile are applied.
// docs/pool.md.
import type { Etcd3, IKeyValue, Watcher } from 'etcd3';
import { openEtcd } from './etcd-client.js';
import { ETCD_CALL_DEADLINE_MS } from './pool-record.js';
import { memberIdOfKey, membersPrefix, type MemberRecord } from './pool-record.js';
import { listPoolMembers, readMember, type PoolSnapshot } from './pool-members.js';
import { PoolView, type MemberChange, type MemberSink } from './pool-view.js';

/** First wait before listing again after etcd failed; doubles up to RETRY_MAX_MS. */
const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 2000;
/** While watching, etcd is asked something this often: a watch on a connection that went silent
 *  (etcd frozen, a network partition) reports nothing by itself. */
const PROBE_MS = 1000;
/** How long close() waits for etcd to confirm the watch's end. */
const CANCEL_WAIT_MS = 500;

/** Where the pool is. */
export interface PoolWatchOptions {
  /** etcd client URLs. */
  readonly endpoints: readonly string[];
  /** Key prefix of the pool's records. */
  readonly prefix: string;
}

/** Where a PoolWatch logs (cli/logger.ts's Logger fits). */
export interface PoolLog {
  debug(event: string, msg: string, fields?: Readonly<Record<string, unknown>>): void;
  info(event: string, msg: string, fields?: Readonly<Record<string, unknown>>): void;
  warn(event: string, msg: string, fields?: Readonly<Record<string, unknown>>): void;
  error(event: string, msg: string, fields?: Readonly<Record<string, unknown>>): void;
}

/** What a PoolWatch has seen so far. */
export interface PoolWatchStats {
  /** Members in the pool as last seen (new regions go only to these). */
  readonly members: number;
  /** Whether the membership in etcd is followed now, or the last one known is served on. */
  readonly etcdUp: boolean;
  readonly left: number;
  readonly joined: number;
  readonly returned: number;
  readonly outages: number;
  readonly badRecords: number;
  /** Changes the data path refused (logged as pool.apply_failed): a direct-mode host that knows
   *  64 servers already, none of them gone. */
  readonly applyFailures: number;
}

/** One client's membership of the pool, followed from etcd until close(). */
export class PoolWatch {
  /** Members whose record went away. */
  left = 0;
  /** Servers new to this client that registered after it started. */
  joined = 0;
  /** Members that left and came back. */
  returned = 0;
  /** Times etcd went out of reach (or the watch broke) while the client was following it. */
  outages = 0;
  /** Malformed records skipped. */
  badRecords = 0;
  /** Changes the sink threw on. */
  applyFailures = 0;

  private readonly client: Etcd3;
  private view: PoolView | null = null;
  private revision: string;
  private watcher: Watcher | null = null;
  private up = true;
  private downSinceMs = 0;
  private caughtUp = 0;  // changes the last list after an outage applied
  private timer: NodeJS.Timeout | null = null;
  private retryMs = RETRY_FIRST_MS;
  private closing: Promise<void> | null = null;

  private constructor(
    private readonly options: PoolWatchOptions,
    private readonly logger: PoolLog,
    client: Etcd3,
    private readonly initial: PoolSnapshot,
  ) {
    this.client = client;
    this.revision = initial.revision;
  }

  /** Lists the members registered now. Rejects with an Error naming the endpoints when etcd
   *  cannot be read, or the prefix when no member is registered. */
  static async open(options: PoolWatchOptions, logger: PoolLog): Promise<PoolWatch> {
    const client = openEtcd([...options.endpoints], { watches: true });
    let bad = 0;
    let snapshot: PoolSnapshot;
    try {
      snapshot = await listPoolMembers(client, options.prefix, logger, () => bad++);
    } catch (e) {
      client.close();
      throw new Error(`cannot read the pool's members from etcd (${options.endpoints.join(', ')}): ${message(e)}`);
    }
    if (snapshot.members.length === 0) {
      client.close();
      throw new Error(`no memory server is registered in the pool under ${options.prefix} (etcd ${options.endpoints.join(', ')})`);
    }
    logger.info('pool.members', `serving the ${snapshot.members.length} memory server(s) registered in the pool`, {
      prefix: options.prefix,
      members: snapshot.members.map((m) => `${m.serverId}@${m.address}`),
    });
    const watch = new PoolWatch(options, logger, client, snapshot);
    watch.badRecords = bad;
    return watch;
  }

  /** The members registered at open(), by server id: the engine starts with these. */
  get members(): readonly MemberRecord[] {
    return this.initial.members;
  }

  /** Starts following the membership from open()'s revision, handing changes to `sink` (the
   *  engine started with `members`). Once. */
  follow(sink: MemberSink): void {
    if (this.view !== null || this.closing !== null) return;
    this.view = new PoolView(this.initial.members, sink);
    this.watch();
  }

  /** Counts and state, for metrics (the agent's, dpu/pool-metrics.ts) and tests. */
  stats(): PoolWatchStats {
    return {
      members: this.view?.size ?? this.initial.members.length,
      etcdUp: this.up,
      left: this.left,
      joined: this.joined,
      returned: this.returned,
      outages: this.outages,
      badRecords: this.badRecords,
      applyFailures: this.applyFailures,
    };
  }

  /** Stops following. Never rejects. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  // A watch of the members' folder from the revision after the last list. Handlers are attached
  // before anything can be emitted: watcher() rather than create(), which would wait through a
  // 'disconnected' before 'connected'.
  private watch(): void {
    const w = this.client.watch().prefix(membersPrefix(this.options.prefix)).startRevision(next(this.revision)).watcher();
    this.watcher = w;
    w.on('put', (kv: IKeyValue) => this.guard(w, () => this.onPut(kv)));
    w.on('delete', (kv: IKeyValue) => this.guard(w, () => this.onDelete(kv)));
    w.on('connected', () => this.guard(w, () => this.watching(w)));
    w.on('disconnected', (e: Error) => this.broken(w, e));
    w.on('error', (e: Error) => this.broken(w, e));
  }

  private onPut(kv: IKeyValue): void {
    const record = readMember(this.options.prefix, kv.key.toString(), kv.value.toString(), this.logger);
    if (record === null) this.badRecords++;
    else this.apply(this.view!.put(record));
  }

  private onDelete(kv: IKeyValue): void {
    const id = memberIdOfKey(this.options.prefix, kv.key.toString());
    if (id !== null) this.apply(this.view!.delete(id));
  }

  // The watch is in place: etcd is back, if it was gone; probe it from now on.
  private watching(w: Watcher): void {
    this.retryMs = RETRY_FIRST_MS;
    if (!this.up) {
      this.up = true;
      this.logger.info('pool.etcd_back', `etcd is back after ${((Date.now() - this.downSinceMs) / 1000).toFixed(1)} s; ` +
        `following the membership again (${this.caughtUp} change(s) caught up, ${this.view!.size} member(s))`, {
        caughtUp: this.caughtUp,
        members: this.view!.size,
      });
    }
    this.schedule(() => this.probe(w), PROBE_MS);
  }

  private probe(w: Watcher): void {
    this.client.get(membersPrefix(this.options.prefix)).options({ deadline: Date.now() + ETCD_CALL_DEADLINE_MS }).exec().then(
      () => {
        if (w === this.watcher) this.schedule(() => this.probe(w), PROBE_MS);
      },
      (e: unknown) => this.broken(w, e),
    );
  }

  // The watch broke or etcd did not answer: drop the watch (the client would resume it itself,
  // from a revision it tracks loosely) and list again once etcd answers.
  private broken(w: Watcher, e: unknown): void {
    if (w !== this.watcher || this.closing !== null) return;
    this.watcher = null;
    w.cancel().catch(() => {});
    this.down(e);
    this.schedule(() => void this.relist(), this.retryMs);
  }

  private down(e: unknown): void {
    if (!this.up) return;
    this.up = false;
    this.outages++;
    this.downSinceMs = Date.now();
    this.logger.warn('pool.etcd_down', `etcd (${this.options.endpoints.join(', ')}) is out of reach: ${message(e)}; ` +
      `serving on with the last known membership (${this.view?.size ?? 0} member(s)) and retrying`);
  }

  private async relist(): Promise<void> {
    let snapshot: PoolSnapshot;
    try {
      snapshot = await listPoolMembers(this.client, this.options.prefix, this.logger, () => this.badRecords++);
    } catch (e) {
      if (this.closing !== null) return;
      this.down(e);
      this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS);
      this.schedule(() => void this.relist(), this.retryMs);
      return;
    }
    if (this.closing !== null) return;
    this.revision = snapshot.revision;
    this.safely(() => {
      const changes = this.view!.reconcile(snapshot.members);
      this.caughtUp = changes.length;
      this.apply(changes);
    });
    this.watch();
  }

  private apply(changes: readonly MemberChange[]): void {
    for (const c of changes) {
      const fields = { serverId: c.serverId, address: c.address };
      if (c.kind === 'left') {
        this.left++;
        this.logger.warn('pool.member_left', `server ${c.serverId} (${c.address}) left the pool: no new region goes there; ` +
          'its regions are still served while it answers', fields);
      } else if (c.kind === 'returned') {
        this.returned++;
        this.logger.info('pool.member_returned', `server ${c.serverId} (${c.address}) is back in the pool: new regions may go there again`, fields);
      } else {
        this.joined++;
        this.logger.debug('pool.member_seen', `server ${c.serverId} (${c.address}) registered in the pool: a link is ` +
          'opened to it, and it is placed once its hello succeeds', fields);
      }
    }
  }

  // Runs a handler of watcher `w`'s events, if `w` is still the watch: a late event of a dropped
  // watch is not applied (the list after it covers it).
  private guard(w: Watcher, handler: () => void): void {
    if (w === this.watcher && this.closing === null) this.safely(handler);
  }

  // Runs `step`; what it throws is logged, never let out (into etcd3's emitter, or a timer).
  private safely(step: () => void): void {
    try {
      step();
    } catch (e) {
      this.applyFailures++;
      this.logger.error('pool.apply_failed', `a membership change could not be applied: ${message(e)}`);
    }
  }

  private schedule(step: () => void, ms: number): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.closing === null) step();
    }, ms);
    this.timer.unref();  // the client's own handles keep the process alive, not this
  }

  private async shutdown(): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    const w = this.watcher;
    this.watcher = null;
    if (w !== null) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([w.cancel().catch(() => {}), new Promise((r) => (timer = setTimeout(r, CANCEL_WAIT_MS)))]);
      clearTimeout(timer);
    }
    this.client.close();
  }
}

// The revision after `revision` (etcd revisions are 64-bit: strings in etcd3).
function next(revision: string): string {
  return String(BigInt(revision) + 1n);
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
