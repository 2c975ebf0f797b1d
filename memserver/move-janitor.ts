// move-janitor.ts — a memory server's own recovery of moves whose migrator died half-way (docs/pool.md
// "Moving hot regions"). A region frozen or sealed for longer than STUCK_MOVE_MS has no live mover:
// a frozen one is thawed (only if still frozen: a seal that raced in is never undone blindly); a
// sealed one is thawed if its name record still names it, after fencing the record so the mover's
// switch can never apply, and freed if no record names it any more (its name names the copy, or was
// deleted). While etcd cannot be read, sealed regions are left as they are.
import type { Etcd3 } from 'etcd3';
import type { Logger } from '../cli/logger.js';
import type { MetricFamily } from '../cli/metrics.js';
import type { NativeConstants } from '../common/constants.js';
import { parseRegionNameRecord, regionNamesPrefix } from '../common/tenant-record.js';
import { PoolRecordError } from '../common/pool-record.js';
import type { RegionAccesses } from './heat.js';
import type { NativeTransportClient } from './native.js';
import { PeriodicCheck } from './periodic-check.js';

/** How long a region may stay frozen or sealed before its move counts as abandoned: far longer than
 *  a move takes (seconds) and than the migrator's default grace (30 s), so a live mover is never
 *  second-guessed. */
export const STUCK_MOVE_MS = 120_000;

/** How often the janitor looks. */
const CHECK_MS = 1000;

/** What the janitor needs of its server. */
export interface JanitorHost {
  constants: NativeConstants;
  regionHeat(): RegionAccesses[];
  /** A client connected to this very server as `tenant`. */
  connectSelf(tenant: string): Promise<NativeTransportClient>;
}

/** Settles this server's abandoned moves. */
export class MoveJanitor {
  /** Regions thawed because their move was abandoned before its switch. */
  thawed = 0;
  /** Sealed regions freed because their name names another region now. */
  freed = 0;

  private readonly since = new Map<number, { move: RegionAccesses['move']; ms: number }>();
  private readonly loop: PeriodicCheck;

  constructor(
    private readonly prefix: string,
    private readonly host: JanitorHost,
    private readonly logger: Logger,
    private readonly client: Etcd3, // the server's, closed by it after close()
    private readonly stuckMs = STUCK_MOVE_MS,
  ) {
    this.loop = new PeriodicCheck(CHECK_MS, () => this.check(), (e) => {
      this.logger.warn('migrate.janitor_failed', `settling stuck moves failed: ${e.message}`);
    });
  }

  /** Starts the periodic check. */
  start(): void {
    this.loop.start();
  }

  async close(): Promise<void> {
    await this.loop.close();
  }

  families(): MetricFamily[] {
    return [
      { type: 'counter', name: 'pd3_memserver_stuck_moves_thawed_total', help: 'Regions thawed here because their move was abandoned before its switch.', samples: [{ value: this.thawed }] },
      { type: 'counter', name: 'pd3_memserver_stuck_moves_freed_total', help: 'Sealed regions freed here because their name had moved to the copy (the mover died before freeing them).', samples: [{ value: this.freed }] },
    ];
  }

  /** One pass at time `now`: notes when each region entered its move state, settles those stuck. */
  async check(now = Date.now()): Promise<void> {
    const regions = this.host.regionHeat();
    const seen = new Set<number>();
    for (const r of regions) {
      seen.add(r.region);
      const known = this.since.get(r.region);
      if (r.move === 'none') this.since.delete(r.region);
      else if (known === undefined || known.move !== r.move) this.since.set(r.region, { move: r.move, ms: now });
    }
    for (const region of [...this.since.keys()]) if (!seen.has(region)) this.since.delete(region);
    for (const r of regions) {
      const entered = this.since.get(r.region);
      if (entered === undefined || now - entered.ms < this.stuckMs) continue;
      if (r.move === 'frozen') await this.thawFrozen(r);
      else if (r.move === 'sealed') await this.settleSealed(r);
    }
  }

  private async control(r: RegionAccesses, op: number, size: number): Promise<number> {
    const conn = await this.host.connectSelf(r.tenant);
    try {
      return (await conn.request(this.host.constants.OP_CONTROL, op, r.region, size)).status;
    } finally {
      conn.close();
    }
  }

  private async thawFrozen(r: RegionAccesses): Promise<void> {
    const status = await this.control(r, this.host.constants.CTL_THAW, this.host.constants.THAW_IF_FROZEN);
    if (status !== 0) return; // sealed meanwhile (the next pass sees it), or gone
    this.thawed++;
    this.since.delete(r.region);
    this.logger.warn('migrate.stuck_thawed', `region ${r.region} was frozen for a move that went no further; serving it again`, { region: r.region, tenant: r.tenant });
  }

  private async settleSealed(r: RegionAccesses): Promise<void> {
    const C = this.host.constants;
    const records = await this.client.getAll().prefix(regionNamesPrefix(this.prefix, r.tenant)).exec();
    const naming = records.kvs.find((kv) => {
      try {
        return parseRegionNameRecord(kv.key.toString(), kv.value.toString()).region === r.region;
      } catch (e) {
        if (e instanceof PoolRecordError) return false;
        throw e;
      }
    });
    if (naming === undefined) {
      // Its name names the copy (or is gone): nobody can reach it through a name any more.
      const status = await this.control(r, C.CTL_DEALLOCATE, 0);
      if (status !== 0) return;
      this.freed++;
      this.since.delete(r.region);
      this.logger.warn('migrate.stuck_freed', `region ${r.region} was sealed by a move whose name switch happened; freed it`, { region: r.region, tenant: r.tenant });
      return;
    }
    // The switch never happened. Rewriting the record unchanged moves its revision on, so the mover's
    // switch (which compares the old one) can never apply; only then is the region reopened.
    const fenced = await this.client.if(naming.key.toString(), 'Mod', '==', naming.mod_revision).then(this.client.put(naming.key.toString()).value(naming.value)).commit();
    if (!fenced.succeeded) return; // changed meanwhile: the next pass looks again
    const status = await this.control(r, C.CTL_THAW, 0);
    if (status !== 0) return;
    this.thawed++;
    this.since.delete(r.region);
    this.logger.warn('migrate.stuck_thawed', `region ${r.region} was sealed by a move whose name switch never happened; serving it again`, { region: r.region, tenant: r.tenant, key: naming.key.toString() });
  }
}
