// tenant-session.ts — a client's membership of the pool as a tenant: an etcd lease that keeps the
// tenant's regions alive (a memory server reclaims a tenant's regions once no client of it has held
// a lease for the grace period), and regions opened by name, which a restarted client finds again.
// docs/pool.md "Leases, named regions and reclamation".
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Etcd3, Lease } from 'etcd3';
import {
  checkRegionName,
  checkTenantName,
  encodeRegionNameRecord,
  encodeTenantLeaseRecord,
  parseRegionNameRecord,
  regionNameKey,
  tenantLeaseKey,
} from '../common/tenant-record.js';
import { Pd3Error } from '../common/errors.js';
import { DEFAULT_POOL_PREFIX } from '../common/pool-record.js';
import type { AllocatedRegion, Pd3Host } from './pd3-host.js';

/** Where the pool is and who this client is. */
export interface TenantSessionOptions {
  /** etcd client URLs. */
  endpoints: string[];
  /** Key prefix of the pool's records (default "/pd3"). */
  prefix?: string;
  /** The tenant this client acts for (the one its agent or direct mode connects as). */
  tenant: string;
  /** Seconds the lease outlives this process (default 10). */
  leaseTtlS?: number;
  /** Distinguishes this client from the tenant's others (default: a random UUID). */
  clientId?: string;
}

/** A named region, as openRegion() returns it. */
export interface NamedRegion extends AllocatedRegion {
  /** Whether this call created it (false: it existed, e.g. from before a restart). */
  created: boolean;
}

/** Pause before taking a new lease after one was lost or could not be registered under. */
const RENEW_PAUSE_MS = 500;
/** Pause before asking again while a named region is being moved (its name not yet switched). */
const MOVE_RETRY_MS = 20;
/** How long close() waits for openRegion calls under way to finish. */
const CLOSE_WAIT_MS = 5000;

/** A tenant's lease in the pool, held from open() to close(). */
export class TenantSession {
  private lease!: Lease; // set by register()
  private closed = false;
  /** Region each name was last resolved to by follow(). */
  private readonly resolved = new Map<string, number>();
  /** openRegion calls under way: close() lets them write their records first. */
  private readonly opening = new Set<Promise<NamedRegion>>();

  private constructor(
    private readonly client: Etcd3,
    private readonly options: Required<TenantSessionOptions>,
  ) {}

  /** Takes a lease for the tenant and registers this client under it. Rejects when etcd cannot be
   *  reached within its deadline, or the options are bad. */
  static async open(options: TenantSessionOptions): Promise<TenantSession> {
    const full: Required<TenantSessionOptions> = {
      endpoints: options.endpoints,
      prefix: options.prefix ?? DEFAULT_POOL_PREFIX,
      tenant: checkTenantName(options.tenant),
      leaseTtlS: options.leaseTtlS ?? 10,
      clientId: options.clientId ?? randomUUID(),
    };
    if (!Number.isInteger(full.leaseTtlS) || full.leaseTtlS < 2) throw new RangeError('leaseTtlS must be a whole number ≥ 2');
    // Loaded only here: an app that never joins a pool never loads the etcd client.
    const { openEtcd } = await import('../common/etcd-client.js');
    const client = openEtcd(full.endpoints);
    const session = new TenantSession(client, full);
    try {
      await session.register(client.lease(full.leaseTtlS));
      return session;
    } catch (e) {
      session.closed = true; // no renewal of a session that never opened
      client.close();
      throw new Error(`cannot join the pool as tenant ${full.tenant} (etcd ${full.endpoints.join(', ')}): ${(e as Error).message}`);
    }
  }

  /** The tenant's name. */
  get tenant(): string {
    return this.options.tenant;
  }

  /** The etcd lease id, in hex. */
  async leaseId(): Promise<string> {
    return this.lease.grant();
  }

  /** The region called `name` of this tenant: the existing one, or a new one of `bytes` allocated
   *  through `host` (agent or direct mode; the host must connect as this tenant). A region that
   *  the record names but its server no longer has (reclaimed) is replaced by a new one. Two
   *  clients opening the same new name at once get the same region: the loser frees its own. */
  openRegion(host: Pd3Host, name: string, bytes: number): Promise<NamedRegion> {
    const opening = this.open(host, name, bytes);
    this.opening.add(opening);
    const forget = (): void => void this.opening.delete(opening);
    opening.then(forget, forget);
    return opening;
  }

  private async open(host: Pd3Host, name: string, bytes: number): Promise<NamedRegion> {
    const key = regionNameKey(this.options.prefix, this.options.tenant, checkRegionName(name));
    for (let attempt = 0; attempt < 3; attempt++) {
      const existing = await this.client.get(key).exec();
      const kv = existing.kvs[0];
      if (kv !== undefined) {
        const record = parseRegionNameRecord(key, kv.value.toString());
        if (await this.stillThere(host, record.region)) return { region: record.region, capacity: record.capacity, created: false };
        // Gone (its server reclaimed it, or lost it): drop the record unless someone replaced it.
        await this.client.if(key, 'Mod', '==', kv.mod_revision).then(this.client.delete().key(key)).commit();
        continue;
      }
      const region = await host.allocate(bytes);
      const won = await this.client
        .if(key, 'Create', '==', 0)
        .then(this.client.put(key).value(encodeRegionNameRecord(region)))
        .commit();
      if (won.succeeded) return { ...region, created: true };
      await host.deallocate(region.region);  // another client created it first: use theirs
    }
    throw new Error(`region ${name}: its record kept changing under this client; try again`);
  }

  /** The region the record of `name` names now, or null when there is none (no allocation). */
  async resolveRegion(name: string): Promise<{ region: number; capacity: number } | null> {
    const key = regionNameKey(this.options.prefix, this.options.tenant, checkRegionName(name));
    const text = await this.client.get(key).string();
    if (text === null) return null;
    const record = parseRegionNameRecord(key, text);
    return { region: record.region, capacity: record.capacity };
  }

  /** Runs `access` on the region called `name` and follows the region when the pool's migrator
   *  moves it to another server (docs/pool.md "Moving hot regions"): an access answered
   *  PD3_E_MOVED (or PD3_E_BAD_REGION, a region freed after its move) re-reads the name's record
   *  and is retried on the region it names, after a short pause while the move is under way (the
   *  record still names the same region), for at most `timeoutMs` (default 10 s); then, or when the
   *  name has no record, it rejects. A write answered PD3_E_MOVED was not applied, so retrying it
   *  is safe; every write acknowledged before a move is in the copy. */
  async follow<T>(name: string, access: (region: number) => Promise<T>, timeoutMs = 10_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    let region = this.resolved.get(name);
    for (;;) {
      if (region === undefined) {
        const found = await this.resolveRegion(name);
        if (found === null) throw new Error(`region ${name}: no such named region of tenant ${this.options.tenant}`);
        region = found.region;
        this.resolved.set(name, region);
      }
      try {
        return await access(region);
      } catch (e) {
        if (!(e instanceof Pd3Error && (e.code === 'PD3_E_MOVED' || e.code === 'PD3_E_BAD_REGION'))) throw e;
        if (Date.now() >= deadline) throw e;
        const before = region;
        const found = await this.resolveRegion(name);
        if (found === null) throw e;
        region = found.region;
        this.resolved.set(name, region);
        if (region === before) await new Promise((r) => setTimeout(r, MOVE_RETRY_MS));
      }
    }
  }

  /** Forgets the region called `name`: frees it and deletes its record. */
  async deleteRegion(host: Pd3Host, name: string): Promise<void> {
    const key = regionNameKey(this.options.prefix, this.options.tenant, checkRegionName(name));
    const got = await this.client.get(key).exec();
    const kv = got.kvs[0];
    if (kv === undefined) return;
    const record = parseRegionNameRecord(key, kv.value.toString());
    await host.deallocate(record.region).catch((e: unknown) => {
      if (!(e instanceof Pd3Error && e.code === 'PD3_E_BAD_REGION')) throw e;
    });
    await this.client.delete().key(key).exec();
  }

  /** Lets openRegion calls under way finish (at most 5 s: a region allocated but not yet named
   *  would be lost to the next life), revokes the lease (the tenant's regions then live only as
   *  long as its other clients, plus the grace period) and closes the etcd client. The hosts those
   *  calls allocate through must still be open. Never rejects. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_WAIT_MS)));
    await Promise.race([Promise.allSettled([...this.opening]), late]);
    clearTimeout(timer);
    await this.lease.revoke().catch(() => {});
    this.client.close();
  }

  // Makes `lease` the session's and writes this client's key under it. Watched before the put: a
  // grant that fails, or a lease etcd ends later, emits 'lost', which takes a new one.
  private register(lease: Lease): Promise<void> {
    this.lease = lease;
    lease.on('lost', () => this.renewLater(lease));
    const key = tenantLeaseKey(this.options.prefix, this.options.tenant, this.options.clientId);
    return lease.put(key).value(encodeTenantLeaseRecord(hostname())).exec().then(() => {});
  }

  // Replaces `failed` with a new lease after a pause, until one holds the client's key. A lease
  // already replaced (its 'lost' and its failed put both report it) is left alone.
  private renewLater(failed: Lease): void {
    setTimeout(() => {
      if (this.closed || failed !== this.lease) return;
      const next = this.client.lease(this.options.leaseTtlS);
      this.register(next).catch(() => this.renewLater(next));
    }, RENEW_PAUSE_MS);
  }

  // Whether `region` still exists for this tenant: a 1-byte read answers ok, or PD3_E_BAD_REGION.
  private async stillThere(host: Pd3Host, region: number): Promise<boolean> {
    try {
      await host.read(region, 0, 1);
      return true;
    } catch (e) {
      if (e instanceof Pd3Error && e.code === 'PD3_E_BAD_REGION') return false;
      if (e instanceof Pd3Error && e.code === 'PD3_E_MOVED') return true; // being moved: follow() finds it
      throw e;
    }
  }
}
