// pool-member.ts — a memory server's membership of the pool: its record in etcd under a lease of
// its own, refreshed every third of the lease's TTL with its free and harvestable bytes. While etcd
// is unreachable the server goes on serving and keeps retrying; when the lease is lost (etcd was
// gone longer than the TTL) it takes a new one and registers again. docs/pool.md.
import { EtcdLeaseInvalidError, type Etcd3, type Lease } from 'etcd3';
import type { Logger } from '../cli/logger.js';
import { ETCD_CALL_DEADLINE_MS } from '../common/pool-record.js';
import type { MetricFamily } from '../cli/metrics.js';
import { encodeMemberRecord, MEMBER_RECORD_VERSION, memberKey, parseMemberRecord, PoolRecordError, type HotRegion, type MemberRecord } from '../common/pool-record.js';

/** How a server joins the pool. */
export interface PoolMemberOptions {
  /** etcd client URLs, e.g. ["http://127.0.0.1:2379"]. */
  endpoints: string[];
  /** Key prefix of the pool's records, e.g. "/pd3". */
  prefix: string;
  /** Seconds the record outlives the server's last refresh. */
  leaseTtlS: number;
  serverId: number;
  /** "HOST:PORT" clients dial. */
  address: string;
}

/** What the record says of the server's memory and heat, read at every refresh. */
export interface MemberCapacity {
  capacityBytes: number;
  freeBytes: number;
  harvestableBytes: number;
  /** The server's load and hottest regions (memserver/heat.ts); absent: not published. */
  heat?: { load: number; hot: HotRegion[] };
}

/** Where the membership stands. */
export type MemberState = 'joining' | 'registered' | 'conflict' | 'unreachable' | 'closed';

/** First delay before trying etcd again after a failure; doubles up to the refresh interval. */
const RETRY_FIRST_MS = 250;

/** One memory server's record in the pool, kept alive until close(). */
export class PoolMember {
  /** Times the record was created or taken over under a new lease. */
  registrations = 0;
  /** Refreshes that reached etcd. */
  refreshes = 0;
  /** etcd calls that failed (unreachable, timed out, refused). */
  failures = 0;
  /** Leases etcd no longer knew when refreshed. */
  leasesLost = 0;
  /** Attempts refused because another server holds this id. */
  conflicts = 0;

  private readonly key: string;
  private readonly startedMs = Date.now();
  private lease: Lease | null = null;
  private leaseId: string | null = null;
  private current: MemberState = 'joining';
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private retryMs = RETRY_FIRST_MS;
  private closing: Promise<void> | null = null;

  private constructor(
    private readonly options: PoolMemberOptions,
    private readonly capacity: () => MemberCapacity,
    private readonly logger: Logger,
    private readonly client: Etcd3,
  ) {
    this.key = memberKey(options.prefix, options.serverId);
  }

  /** Starts joining through `client` (the caller's, closed by the caller after close()): resolves
   *  after the first attempt, registered or not (the server serves either way; `state` and the
   *  logs say which, and later attempts follow on their own). */
  static async join(options: PoolMemberOptions, capacity: () => MemberCapacity, logger: Logger, client: Etcd3): Promise<PoolMember> {
    const member = new PoolMember(options, capacity, logger, client);
    await member.turn();
    return member;
  }

  /** Where the membership stands now. */
  get state(): MemberState {
    return this.current;
  }

  /** The etcd key of this server's record. */
  get recordKey(): string {
    return this.key;
  }

  /** Ms between refreshes: a third of the TTL, so two may fail before the record expires. */
  get refreshMs(): number {
    return (this.options.leaseTtlS * 1000) / 3;
  }

  /** Stops refreshing and revokes the lease, so the pool drops the server at once rather than a
   *  TTL later. Never rejects: a failure is logged. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  /** The membership's metric families. */
  families(): MetricFamily[] {
    const counter = (name: string, help: string, value: number): MetricFamily => ({
      type: 'counter',
      name: `pd3_memserver_pool_${name}_total`,
      help,
      samples: [{ value }],
    });
    return [
      {
        type: 'gauge',
        name: 'pd3_memserver_pool_registered',
        help: 'Whether the server is registered in the pool now (1) or not (0).',
        samples: [{ value: this.current === 'registered' ? 1 : 0 }],
      },
      counter('registrations', 'Times the membership record was created or taken over under a new lease.', this.registrations),
      counter('refreshes', 'Membership refreshes that reached etcd.', this.refreshes),
      counter('etcd_failures', 'etcd calls that failed (unreachable, timed out, refused).', this.failures),
      counter('leases_lost', 'Leases etcd no longer knew at a refresh (etcd was gone longer than the TTL).', this.leasesLost),
      counter('conflicts', 'Registrations refused because another server holds this server id.', this.conflicts),
    ];
  }

  // One step, then the next one scheduled: register when not registered, else refresh.
  private async turn(): Promise<void> {
    if (this.closing !== null) return;
    this.running = this.step();
    await this.running;
    this.running = null;
    if (this.closing !== null) return;
    const wait = this.current === 'registered' ? this.refreshMs : this.retryMs;
    if (this.current !== 'registered') this.retryMs = Math.min(this.retryMs * 2, this.refreshMs);
    this.timer = setTimeout(() => void this.turn(), wait);
    this.timer.unref(); // the server's own handles keep the process alive, not this
  }

  private async step(): Promise<void> {
    try {
      if (this.current === 'registered') await this.refresh();
      else await this.register();
    } catch (e) {
      // etcd answers "lease not found" to a keep-alive or a put under a lease that ended.
      if (e instanceof EtcdLeaseInvalidError) this.lostLease();
      else this.failed(e);
    }
  }

  private async register(): Promise<void> {
    if (this.leaseId === null) {
      const lease = this.client.lease(this.options.leaseTtlS, { autoKeepAlive: false, ...deadline() });
      lease.on('lost', () => {}); // a failed grant also rejects grant(), handled there
      this.leaseId = await lease.grant();
      this.lease = lease;
    }
    const record = encodeMemberRecord(this.record());
    const created = await this.client
      .if(this.key, 'Create', '==', 0)
      .then(this.client.put(this.key).value(record).lease(this.leaseId))
      .commit();
    if (created.succeeded) {
      this.registered('created');
      return;
    }
    // The id is taken: by this server's own earlier life (same address; its lease has not ended
    // yet), which is taken over, or by another server, which is a configuration error.
    const held = await this.client.get(this.key).string();
    if (held === null) return; // gone since: the next attempt creates it
    let holder: MemberRecord | null = null;
    try {
      holder = parseMemberRecord(this.options.prefix, this.key, held);
    } catch (e) {
      if (!(e instanceof PoolRecordError)) throw e;
    }
    if (holder !== null && holder.address !== this.options.address) {
      this.conflicts++;
      if (this.current !== 'conflict') {
        this.logger.error('pool.id_taken', `server id ${this.options.serverId} is registered by ${holder.address}; ` +
          'retrying until that server leaves (give each server its own --server-id)', { key: this.key, holder: holder.address });
      }
      this.current = 'conflict';
      return;
    }
    const taken = await this.client
      .if(this.key, 'Value', '==', held)
      .then(this.client.put(this.key).value(record).lease(this.leaseId))
      .commit();
    if (taken.succeeded) this.registered(holder === null ? 'replaced a malformed record' : 'took over its earlier record');
  }

  private registered(how: string): void {
    this.registrations++;
    this.retryMs = RETRY_FIRST_MS;
    const was = this.current;
    this.current = 'registered';
    this.logger.info('pool.registered', `registered in the pool as ${this.key} (${how}${was === 'unreachable' ? ', etcd is back' : ''})`, {
      key: this.key,
      lease: this.leaseId,
      ttlS: this.options.leaseTtlS,
    });
  }

  private async refresh(): Promise<void> {
    await this.lease!.keepaliveOnce(deadline());
    // Rewrite the record only while it is still ours (under our lease).
    const put = await this.client
      .if(this.key, 'Lease', '==', this.leaseId!)
      .then(this.client.put(this.key).value(encodeMemberRecord(this.record())).lease(this.leaseId!))
      .commit();
    if (!put.succeeded) {
      this.logger.warn('pool.record_lost', `${this.key} is no longer under this server's lease; registering again`);
      this.current = 'joining';
      return;
    }
    this.refreshes++;
  }

  private lostLease(): void {
    this.leasesLost++;
    this.logger.warn('pool.lease_lost', `lease ${this.leaseId} has ended (etcd was out of reach for longer than its ` +
      `${this.options.leaseTtlS} s TTL); registering again under a new one`);
    this.dropLease();
    this.current = 'joining';
  }

  private failed(e: unknown): void {
    this.failures++;
    if (this.current !== 'unreachable') {
      this.logger.warn('pool.etcd_unreachable', `etcd (${this.options.endpoints.join(', ')}) failed: ${message(e)}; ` +
        'serving on, retrying', { state: this.current });
    }
    // A refresh that failed may have let the lease end; the next turn finds out.
    if (this.current === 'registered' || this.current === 'joining') this.current = 'unreachable';
  }

  private record(): MemberRecord {
    const c = this.capacity();
    return {
      v: MEMBER_RECORD_VERSION,
      serverId: this.options.serverId,
      address: this.options.address,
      capacityBytes: c.capacityBytes,
      freeBytes: Math.min(c.freeBytes, c.capacityBytes),
      harvestableBytes: c.harvestableBytes,
      startedMs: this.startedMs,
      updatedMs: Date.now(),
      ...(c.heat === undefined ? {} : { load: c.heat.load, hot: c.heat.hot }),
    };
  }

  private dropLease(): void {
    this.lease?.release();
    this.lease = null;
    this.leaseId = null;
  }

  private async shutdown(): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    await this.running;
    const lease = this.lease;
    this.lease = null;
    if (lease !== null && this.current === 'registered') {
      try {
        await lease.revoke(deadline());
        this.logger.info('pool.left', `left the pool: ${this.key} removed`);
      } catch (e) {
        this.logger.warn('pool.leave_failed', `could not revoke the lease (${message(e)}); ${this.key} ends with it within ${this.options.leaseTtlS} s`);
      }
    }
    this.current = 'closed';
  }
}

// Call options of one etcd call: it gives up after ETCD_CALL_DEADLINE_MS.
function deadline(): { deadline: number } {
  return { deadline: Date.now() + ETCD_CALL_DEADLINE_MS };
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
