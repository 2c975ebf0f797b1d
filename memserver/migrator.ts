// migrator.ts — the pool's hot-region migrator, run by every memory server started with --etcd
// --migrate on and acting only on the one that leads (MigratorLeadership). Every --migrate-interval
// the leader reads the members' loads; when the hottest is more than --migrate-ratio times the
// coldest, it moves the hottest named region of the hottest server to the coldest (RegionMove), at
// most one move per interval, none of a name moved within the last MOVE_COOLDOWN_CHECKS checks, and
// none until every server has published a record written after the last move.
// The source's copy is freed after --migrate-grace. docs/pool.md "Moving hot regions".
import type { Etcd3 } from 'etcd3';
import type { Logger } from '../cli/logger.js';
import type { MetricFamily } from '../cli/metrics.js';
import type { NativeConstants } from '../common/constants.js';
import { listPoolMembers } from '../common/pool-members.js';
import { PoolRecordError, type MemberRecord } from '../common/pool-record.js';
import { parseRegionNameRecord, regionsPrefix, tenantOfRegionNameKey } from '../common/tenant-record.js';
import { MigratorLeadership } from './migrator-leadership.js';
import type { NativeTransportClient } from './native.js';
import { moveRegion, type MovePlan, type MoveOutcome } from './region-move.js';
import { PeriodicCheck } from './periodic-check.js';

/** How the migrator runs (pd3-memserver --migrate*). */
export interface MigratorOptions {
  prefix: string;
  serverId: number;
  leaseTtlS: number;
  intervalMs: number;
  /** Move when the hottest load exceeds this many times the coldest. */
  ratio: number;
  /** Seconds a moved region's source answers PD3_E_MOVED before it is freed. */
  graceS: number;
  /** Timeout of each transport step of a move. */
  stepTimeoutMs: number;
}

/** What the migrator needs of its server. */
export interface MigratorHost {
  constants: NativeConstants;
  /** A connected client for `tenant` at `address`, authenticated with the tenant's credential. */
  connect(address: string, tenant: string, timeoutMs: number): Promise<NativeTransportClient>;
}

/** Below this load (accesses per second) the hottest server is never drained: an idle pool is balanced. */
export const MIN_LOAD_TO_MOVE = 1;
/** Checks a moved name waits before it may move again (so a region cannot bounce between servers). */
export const MOVE_COOLDOWN_CHECKS = 10;

/** A named region as the pool's name records list it. */
interface NamedRegion {
  key: string;
  tenant: string;
  region: number;
  capacity: number;
  modRevision: string;
}

/** The leader's view of one check: whether and what to move. */
export type MoveDecision = { move: false; why: string } | { move: true; from: MemberRecord; to: MemberRecord; region: NamedRegion; rate: number };

/** Decides one check (pure: the members' records, the name records, the names in cooldown, and
 *  when the last move ended: a record written before then still counts the moved region where it
 *  was, so no move is decided until every measured record is newer). */
export function decideMove(
  members: readonly MemberRecord[],
  names: readonly NamedRegion[],
  ratio: number,
  cooling: ReadonlySet<string>,
  lastMoveMs = 0,
): MoveDecision {
  const measured = members.filter((m) => m.load !== undefined);
  if (measured.length < 2) return { move: false, why: 'fewer than two servers publish a load' };
  const stale = measured.find((m) => m.updatedMs <= lastMoveMs);
  if (stale !== undefined) return { move: false, why: `server ${stale.serverId}'s record predates the last move` };
  const byLoad = [...measured].sort((a, b) => b.load! - a.load! || a.serverId - b.serverId);
  const hot = byLoad[0]!;
  const cold = byLoad[byLoad.length - 1]!;
  if (hot.load! < MIN_LOAD_TO_MOVE) return { move: false, why: `the hottest load ${hot.load} is under ${MIN_LOAD_TO_MOVE}/s` };
  if (hot.load! <= ratio * cold.load!) return { move: false, why: `server ${hot.serverId}'s load ${hot.load} is within ${ratio}× server ${cold.serverId}'s ${cold.load}` };
  const byRegion = new Map(names.map((n) => [n.region, n]));
  for (const h of hot.hot ?? []) {
    const named = byRegion.get(h.region);
    if (named === undefined || cooling.has(named.key)) continue;
    // Moving it must narrow the gap, not swap the roles of the two servers.
    if (h.rate >= hot.load! - cold.load!) continue;
    if (named.capacity > cold.freeBytes) continue;
    return { move: true, from: hot, to: cold, region: named, rate: h.rate };
  }
  return { move: false, why: `no hot named region of server ${hot.serverId} can move to server ${cold.serverId}` };
}

/** The migrator of one server: campaigns, and checks while it leads. */
export class Migrator {
  started = 0;
  done = 0;
  aborted = 0;
  unresolved = 0;
  movedBytes = 0;
  checks = 0;

  private readonly leadership: MigratorLeadership;
  private readonly loop: PeriodicCheck;
  private leading = false;
  private readonly cooldown = new Map<string, number>();  // name key → check number it may move again
  private readonly frees = new Set<NodeJS.Timeout>();
  private lastMoveMs = 0;  // when the last move ended (Date.now())

  constructor(
    private readonly options: MigratorOptions,
    private readonly host: MigratorHost,
    private readonly logger: Logger,
    private readonly client: Etcd3, // the server's, closed by it after close()
  ) {
    this.leadership = new MigratorLeadership(client, options.prefix, options.serverId, options.leaseTtlS);
    this.loop = new PeriodicCheck(options.intervalMs, () => this.check(), (e) => {
      this.logger.warn('migrate.check_failed', `the migrator's check failed: ${e.message}`);
    });
  }

  /** Whether this server leads the migrator now. */
  get isLeader(): boolean {
    return this.leading;
  }

  /** Starts the periodic check. */
  start(): void {
    this.loop.start();
  }

  /** Stops checking (a move under way finishes first), frees nothing more, and resigns. */
  async close(): Promise<void> {
    await this.loop.close();
    for (const t of this.frees) clearTimeout(t);
    this.frees.clear();
    await this.leadership.resign();
    this.leading = false;
  }

  /** The migrator's metric families. */
  families(): MetricFamily[] {
    const counter = (name: string, help: string, value: number): MetricFamily => ({
      type: 'counter',
      name: `pd3_memserver_${name}_total`,
      help,
      samples: [{ value }],
    });
    return [
      { type: 'gauge', name: 'pd3_memserver_migrator_leader', help: 'Whether this server leads the pool\'s region migrator (1) or not (0).', samples: [{ value: this.leading ? 1 : 0 }] },
      counter('migrations_started', 'Region moves this server started as the migrator\'s leader.', this.started),
      counter('migrations_done', 'Region moves that switched the name to the copy.', this.done),
      counter('migrations_aborted', 'Region moves given up before the switch (the source serves again).', this.aborted),
      counter('migrations_unresolved', 'Region moves whose switch could not be confirmed either way (the source stays sealed).', this.unresolved),
      counter('migrated_bytes', 'Bytes of regions moved (done moves).', this.movedBytes),
    ];
  }

  /** One check: campaign, then, while leading, maybe one move. */
  async check(): Promise<void> {
    this.checks++;
    const was = this.leading;
    try {
      this.leading = await this.leadership.campaign();
    } catch (e) {
      this.leading = false;
      if (was) this.logger.warn('migrate.leader_lost', `cannot reach etcd to hold the migrator's leadership: ${(e as Error).message}`);
      return;
    }
    if (this.leading !== was) {
      this.logger.info(this.leading ? 'migrate.leader' : 'migrate.follower', this.leading ? `server ${this.options.serverId} leads the region migrator` : 'another server leads the region migrator');
    }
    if (!this.leading) return;
    let decision: MoveDecision;
    try {
      const { members } = await listPoolMembers(this.client, this.options.prefix, this.logger);
      decision = decideMove(members, await this.namedRegions(), this.options.ratio, this.cooling(), this.lastMoveMs);
    } catch (e) {
      this.logger.warn('migrate.blind', `cannot read the pool from etcd; no move this check: ${(e as Error).message}`);
      return;
    }
    if (!decision.move) {
      this.logger.debug('migrate.balanced', decision.why);
      return;
    }
    await this.move(decision);
  }

  private async move(d: Extract<MoveDecision, { move: true }>): Promise<void> {
    const leaseId = this.leadership.leaseId;
    if (leaseId === null) return;
    const plan: MovePlan = {
      tenant: d.region.tenant,
      key: d.region.key,
      modRevision: d.region.modRevision,
      region: d.region.region,
      capacity: d.region.capacity,
      fromAddress: d.from.address,
      toAddress: d.to.address,
    };
    const fields = { key: plan.key, region: plan.region, from: d.from.serverId, to: d.to.serverId, bytes: plan.capacity, rate: d.rate };
    this.started++;
    this.cooldown.set(plan.key, this.checks + MOVE_COOLDOWN_CHECKS);
    this.logger.info('migrate.started', `moving ${plan.key} (region ${plan.region}, ${d.rate.toFixed(1)} accesses/s) from server ` +
      `${d.from.serverId} (load ${d.from.load}) to server ${d.to.serverId} (load ${d.to.load})`, fields);
    const began = Date.now();
    const outcome: MoveOutcome = await moveRegion(plan, {
      client: this.client,
      constants: this.host.constants,
      connect: (address, tenant) => this.host.connect(address, tenant, this.options.stepTimeoutMs),
      leaderKey: this.leadership.key,
      leaseId,
    });
    this.lastMoveMs = Date.now();
    if (outcome.kind === 'done') {
      this.done++;
      this.movedBytes += outcome.bytes;
      this.logger.info('migrate.done', `${plan.key} now names region ${outcome.copy} on server ${d.to.serverId}; region ${plan.region} ` +
        `answers PD3_E_MOVED and is freed in ${this.options.graceS} s`, { ...fields, copy: outcome.copy, ms: Date.now() - began });
      this.freeLater(plan);
    } else if (outcome.kind === 'aborted') {
      this.aborted++;
      this.logger.warn('migrate.aborted', `moving ${plan.key} failed at ${outcome.stage}: ${outcome.reason}; the source serves it again` +
        (outcome.cleanup.length === 0 ? '' : ` (not undone: ${outcome.cleanup.join('; ')})`), { ...fields, stage: outcome.stage });
    } else {
      this.unresolved++;
      this.logger.error('migrate.unresolved', `moving ${plan.key}: whether its name was switched is unknown (${outcome.reason}); ` +
        `region ${plan.region} stays sealed (every access answers PD3_E_MOVED) until its server's move janitor settles it from the name record`, fields);
    }
  }

  // Frees the source region after the grace: clients still using its id meanwhile get PD3_E_MOVED.
  private freeLater(plan: MovePlan): void {
    const timer = setTimeout(() => void this.free(plan, timer), this.options.graceS * 1000);
    timer.unref();
    this.frees.add(timer);
  }

  // DEALLOCATE of the moved source region (the migrator connects as its tenant, its owner).
  private async free(plan: MovePlan, timer: NodeJS.Timeout): Promise<void> {
    this.frees.delete(timer);
    try {
      const conn = await this.host.connect(plan.fromAddress, plan.tenant, this.options.stepTimeoutMs);
      const r = await conn.request(this.host.constants.OP_CONTROL, this.host.constants.CTL_DEALLOCATE, plan.region, 0);
      conn.close();
      if (r.status === 0) this.logger.info('migrate.freed', `freed region ${plan.region}, moved from ${plan.fromAddress}`, { region: plan.region });
      else this.logger.warn('migrate.free_failed', `freeing moved region ${plan.region}: status ${r.status}`, { region: plan.region });
    } catch (e) {
      this.logger.warn('migrate.free_failed', `freeing moved region ${plan.region}: ${(e as Error).message}`, { region: plan.region });
    }
  }

  private cooling(): Set<string> {
    for (const [key, until] of this.cooldown) if (until <= this.checks) this.cooldown.delete(key);
    return new Set(this.cooldown.keys());
  }

  // Every tenant's region-name records (a malformed one is skipped: it never moves).
  private async namedRegions(): Promise<NamedRegion[]> {
    const reply = await this.client.getAll().prefix(regionsPrefix(this.options.prefix)).exec();
    const out: NamedRegion[] = [];
    for (const kv of reply.kvs) {
      const key = kv.key.toString();
      const tenant = tenantOfRegionNameKey(this.options.prefix, key);
      if (tenant === null) continue;
      try {
        const r = parseRegionNameRecord(key, kv.value.toString());
        out.push({ key, tenant, region: r.region, capacity: r.capacity, modRevision: kv.mod_revision });
      } catch (e) {
        if (!(e instanceof PoolRecordError)) throw e;
      }
    }
    return out;
  }
}
