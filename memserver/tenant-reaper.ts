// tenant-reaper.ts — a memory server's half of reclamation: every tenant holding regions here must
// have a live client lease in the pool (host/tenant-session.ts); a tenant with none for the grace
// period loses its regions here (memory, backing files, index entries) and the name records that
// point at them. While etcd cannot be read nothing is reclaimed, and the grace starts over once it
// can: the server never frees data on the strength of a view it could not refresh. docs/pool.md.
import type { Etcd3 } from 'etcd3';
import type { Logger } from '../cli/logger.js';
import type { MetricFamily } from '../cli/metrics.js';
import type { PoolOptions } from '../cli/pool-settings.js';
import { parseRegionNameRecord, regionNamesPrefix, tenantOfLeaseKey, tenantsPrefix } from '../common/tenant-record.js';
import { PoolRecordError } from '../common/pool-record.js';
import type { TenantUsage } from './native.js';
import { PeriodicCheck } from './periodic-check.js';

/** What the reaper needs of the server. */
export interface ReclaimTarget {
  tenants(): TenantUsage[];
  reclaimTenant(tenant: string): void;
  /** Whether a global region id names a region of this server. */
  ownsRegion(region: number): boolean;
}

/** How often the reaper looks, at most: a tenant is reclaimed at most this long after its grace. */
const CHECK_MS = 500;

/** Watches the tenants holding regions here and reclaims those whose leases are gone. */
export class TenantReaper {
  /** Tenants reclaimed. */
  reclaims = 0;
  /** Passes that could not read etcd (no reclamation during them). */
  blindPasses = 0;

  private readonly absentSince = new Map<string, number>();
  private blind = false;
  private readonly loop: PeriodicCheck;

  constructor(
    private readonly pool: Pick<PoolOptions, 'prefix'>,
    private readonly graceS: number,
    private readonly target: ReclaimTarget,
    private readonly logger: Logger,
    private readonly client: Etcd3, // the server's, closed by it after close()
  ) {
    this.loop = new PeriodicCheck(CHECK_MS, () => this.check(), (e) => {
      this.logger.warn('tenant.reaper_failed', `the reclamation check failed: ${e.message}`);
    });
  }

  /** Starts the periodic check. */
  start(): void {
    this.loop.start();
  }

  /** Stops checking (a check under way finishes first). */
  async close(): Promise<void> {
    await this.loop.close();
  }

  /** The reaper's metric families. */
  families(): MetricFamily[] {
    return [
      {
        type: 'counter',
        name: 'pd3_memserver_pool_tenants_reclaimed_total',
        help: "Tenants whose regions were freed here because no client of theirs held a lease for the grace period.",
        samples: [{ value: this.reclaims }],
      },
      {
        type: 'gauge',
        name: 'pd3_memserver_pool_tenants_without_lease',
        help: 'Tenants holding regions here whose clients hold no lease now (reclaimed when their grace ends).',
        samples: [{ value: this.absentSince.size }],
      },
      {
        type: 'counter',
        name: 'pd3_memserver_pool_reaper_blind_total',
        help: 'Reclamation checks that could not read the leases from etcd (nothing is reclaimed then).',
        samples: [{ value: this.blindPasses }],
      },
    ];
  }

  /** One check: reads the live tenants, starts or ends graces, reclaims the expired. */
  async check(now = Date.now()): Promise<void> {
    const holders = this.target.tenants().filter((t) => t.tenant !== '');  // the default tenant has no lease
    if (holders.length === 0 && this.absentSince.size === 0) return;
    let live: Set<string>;
    try {
      live = await this.liveTenants();
    } catch (e) {
      this.blindPasses++;
      if (!this.blind) {
        this.logger.warn('pool.reaper_blind', `cannot read the tenants' leases from etcd; reclaiming nothing until it answers: ${(e as Error).message}`);
      }
      this.blind = true;
      this.absentSince.clear();  // the grace starts over once leases can be read again
      return;
    }
    if (this.blind) this.logger.info('pool.reaper_sees', "the tenants' leases can be read again");
    this.blind = false;
    for (const tenant of [...this.absentSince.keys()]) {
      if (live.has(tenant) || !holders.some((h) => h.tenant === tenant)) {
        if (live.has(tenant)) this.logger.info('tenant.lease_back', `tenant ${tenant} holds a lease again; its regions stay`, { tenant });
        this.absentSince.delete(tenant);
      }
    }
    for (const usage of holders) {
      if (live.has(usage.tenant)) continue;
      const since = this.absentSince.get(usage.tenant);
      if (since === undefined) {
        this.absentSince.set(usage.tenant, now);
        this.logger.info(
          'tenant.lease_gone',
          `tenant ${usage.tenant} holds ${usage.regions} region(s) here and no lease; they are reclaimed in ${this.graceS} s unless a client returns`,
          { tenant: usage.tenant, regions: usage.regions, bytes: usage.bytes, graceS: this.graceS },
        );
      } else if (now - since >= this.graceS * 1000) {
        await this.reclaim(usage);
      }
    }
  }

  private async liveTenants(): Promise<Set<string>> {
    const keys = await this.client.getAll().prefix(tenantsPrefix(this.pool.prefix)).keys();
    const live = new Set<string>();
    for (const key of keys) {
      const tenant = tenantOfLeaseKey(this.pool.prefix, key);
      if (tenant !== null) live.add(tenant);
    }
    return live;
  }

  private async reclaim(usage: TenantUsage): Promise<void> {
    // The name records of the regions here go first: a region id is reused once freed, and a name
    // left pointing at it could hand a returning client some other region of its tenant. If they
    // cannot be deleted, nothing is freed now; the next pass tries again.
    try {
      await this.deleteNames(usage.tenant);
    } catch (e) {
      this.logger.warn('tenant.names_left', `tenant ${usage.tenant}: its region-name records could not be deleted (${(e as Error).message}); its regions stay until they can`, { tenant: usage.tenant });
      return;
    }
    this.absentSince.delete(usage.tenant);
    this.target.reclaimTenant(usage.tenant);
    this.reclaims++;
    this.logger.info('tenant.reclaim', `tenant ${usage.tenant}: reclaiming ${usage.regions} region(s), ${usage.bytes} bytes`, {
      tenant: usage.tenant,
      regions: usage.regions,
      bytes: usage.bytes,
    });
  }

  // Deletes the tenant's region-name records that point at regions of this server.
  private async deleteNames(tenant: string): Promise<void> {
    const folder = regionNamesPrefix(this.pool.prefix, tenant);
    const records = await this.client.getAll().prefix(folder).strings();
    for (const [key, text] of Object.entries(records)) {
      let region: number;
      try {
        region = parseRegionNameRecord(key, text).region;
      } catch (e) {
        if (!(e instanceof PoolRecordError)) throw e;
        this.logger.warn('pool.bad_record', `skipped a malformed region-name record: ${e.message}`, { key });
        continue;
      }
      if (this.target.ownsRegion(region)) await this.client.delete().key(key).exec();
    }
  }
}
