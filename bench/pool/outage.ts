// outage.ts — the etcd-outage phase of `npm run bench -- pool`: what an etcd outage costs the data
// path, and how soon the pool catches up when etcd is back. A real etcd; three pd3-memservers in
// its pool (ids 1-3, lease TTL T); a pd3-agent that takes its servers from the pool (--etcd); and
// the data system (bench/pool/outage-client.ts, host CPUs) under a steady load through the agent:
// 64-byte writes read back, and a new region allocated every 20 ms.
//
// Timeline, one window W each: before (etcd up); etcd killed -9, and the outage, during which
// server 3 is killed -9 halfway; etcd started again on the same data, and the catch-up (a window
// of its own, as long as it takes); after (once the agent has caught up). The figures: the load's
// rate in each window, failed and wrong operations, allocations during the outage (with the last
// membership known: server 3's record outlives it), how soon the agent notices the outage
// (pool.etcd_down) and etcd's return (pool.etcd_back, timed from etcd answering its health check
// again), and how soon after that server 3 leaves the agent's pool (pool.member_left: its lease,
// restarted by etcd with a fresh TTL, has to run out first). docs/benchmarks.md "pool".
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnOnSide } from '../../examples/harness/core-layout.js';
import { EtcdServer } from '../../examples/harness/etcd-server.js';
import { median } from '../../examples/harness/median.js';
import { findOnPath } from '../../examples/harness/on-path.js';
import { AGENT_CLI, firstLoggedAt, logEvents, startDaemon, startMemserver, type Daemon } from '../../examples/harness/processes.js';
import { ChildLines } from './child-lines.js';

const CLIENT = join(dirname(fileURLToPath(import.meta.url)), 'outage-client.js');
const PREFIX = '/pd3-bench-outage';
const SERVER_IDS = [1, 2, 3];
const KILLED = 3;
const TOKEN_BYTES = 16;

/** The phase's settings. */
export interface OutageSettings {
  /** Seconds of each window: before, during the outage, after. */
  windowS: number;
  /** The members' lease TTL, seconds. */
  leaseTtlS: number;
}

/** The load in one window. */
export interface LoadWindow {
  opsPerS: number;
  failed: number;
  wrong: number;
  allocs: number;
  allocFailed: number;
  allocP50Us: number;
  allocP99Us: number;
  /** Allocations that went to each server id. */
  allocServers: Record<string, number>;
}

/** What the phase measured. */
export interface OutagePhase extends OutageSettings {
  before: LoadWindow;
  during: LoadWindow;
  /** From etcd's start again until the after window: the agent and the members catching up. */
  catchUp: LoadWindow;
  after: LoadWindow;
  /** ms from etcd's kill to the agent's pool.etcd_down. */
  detectMs: number;
  /** ms etcd took to answer its health check again, from its start (not part of catchUpMs). */
  etcdStartMs: number;
  /** ms from etcd answering again to the agent's pool.etcd_back. */
  catchUpMs: number;
  /** ms from etcd answering again to server 3's pool.member_left. */
  memberLeftMs: number;
  /** Times servers 1 and 2 left and came back around etcd's restart (their leases are restarted
   *  too; a member whose etcd client is backing off may miss its refresh). */
  liveMembersFlapped: number;
  /** The first error messages seen, for the log. */
  errors: string[];
}

/** One line of the outage client: its counters since the start, and this tick's allocations. */
export interface Tick {
  t: number;
  ops: number;
  failed: number;
  wrong: number;
  allocs: number;
  allocFailed: number;
  allocUs: number[];
  allocServers: number[];
  errors: string[];
}

/** Runs the phase; null (after saying why) when etcd is not installed. */
export async function runOutagePhase(settings: OutageSettings, log: (line: string) => void): Promise<OutagePhase | null> {
  const binary = findOnPath('etcd');
  if (binary === null) {
    log('  outage: skipped (etcd is not on PATH; Debian package etcd-server)');
    return null;
  }
  const token = randomBytes(TOKEN_BYTES).toString('hex');
  const etcd = await EtcdServer.create(binary);
  const daemons: Daemon[] = [];
  let client: ChildLines | null = null;
  let segment = '';
  try {
    await etcd.start();
    const servers = new Map<number, Daemon>();
    for (const id of SERVER_IDS) {
      const d = await startMemserver({ token, serverId: id, capacity: '256M',
        extra: ['--etcd', etcd.url, '--etcd-prefix', PREFIX, '--lease-ttl', String(settings.leaseTtlS)] });
      daemons.push(d);
      servers.set(id, d);
    }
    const child = spawnOnSide('host', process.execPath, [CLIENT], { stdio: ['pipe', 'pipe', 'inherit'] });
    client = new ChildLines(child, 'the outage client');
    segment = String((await client.next()).segment);
    const agent = await startDaemon(AGENT_CLI, ['--segment', segment, '--etcd', etcd.url, '--etcd-prefix', PREFIX,
      '--metrics', 'off', '--log-level', 'info'], token);
    daemons.push(agent);
    // The agent lists the pool before it says it is ready; its links come up right after.
    const listed = logEvents(agent, 'pool.members')[0]?.members as string[] | undefined;
    if (listed?.length !== SERVER_IDS.length) {
      throw new Error(`the agent listed ${JSON.stringify(listed)} from the pool, not ${SERVER_IDS.length} servers`);
    }
    client.send({ avoid: KILLED });
    const ticks: Tick[] = [];
    const ready = await client.next();
    if (ready.ready !== true) throw new Error(`the outage client said ${JSON.stringify(ready)}`);
    const reading = (async () => {
      for (;;) ticks.push((await client!.next()) as unknown as Tick);
    })().catch(() => undefined); // ends when the client exits
    const windowMs = settings.windowS * 1000;
    await sleep(500); // warm-up

    const beforeFrom = Date.now();
    await sleep(windowMs);
    const killedAt = Date.now();
    await etcd.kill();
    await until(() => firstLoggedAt(agent, 'pool.etcd_down') !== null, 5000, 'pool.etcd_down');
    const detectMs = firstLoggedAt(agent, 'pool.etcd_down')! - killedAt;
    const duringFrom = Date.now();
    await sleep(windowMs / 2);
    await servers.get(KILLED)!.kill();
    await sleep(windowMs / 2);
    const duringTo = Date.now();

    const startingAt = Date.now();
    await etcd.start();
    const startedAt = Date.now(); // healthy again
    const etcdStartMs = startedAt - startingAt;
    await until(() => firstLoggedAt(agent, 'pool.etcd_back') !== null, 15_000, 'pool.etcd_back');
    const catchUpMs = firstLoggedAt(agent, 'pool.etcd_back')! - startedAt;
    const leftOf = (id: number): Array<Record<string, unknown>> =>
      logEvents(agent, 'pool.member_left').filter((e) => e.serverId === id);
    await until(() => leftOf(KILLED).length > 0, (settings.leaseTtlS + 10) * 1000, `server ${KILLED} leaving the pool`);
    const memberLeftMs = Date.parse(String(leftOf(KILLED)[0]!.ts)) - startedAt;
    await sleep(1000); // past etcd's next lease-expiry pass, so a live member that lost its lease has said so
    const afterFrom = Date.now();
    await sleep(windowMs);
    const afterTo = Date.now();
    client.send({ stop: true });
    await reading;

    const liveMembersFlapped = SERVER_IDS.filter((id) => id !== KILLED).reduce((n, id) => n + leftOf(id).length, 0);
    const errors = [...new Set(ticks.flatMap((t) => t.errors))].slice(0, 5);
    return {
      ...settings,
      before: loadWindow(ticks, beforeFrom, killedAt),
      during: loadWindow(ticks, duringFrom, duringTo),
      catchUp: loadWindow(ticks, duringTo, afterFrom),
      after: loadWindow(ticks, afterFrom, afterTo),
      detectMs,
      etcdStartMs,
      catchUpMs,
      memberLeftMs,
      liveMembersFlapped,
      errors,
    };
  } finally {
    await client?.kill();
    if (segment !== '') rmSync(join('/dev/shm', segment), { force: true }); // the killed client's segment
    await Promise.all(daemons.map((d) => d.stop()));
    await etcd.close();
  }
}

/** The load between `from` and `to` (ms since the epoch), from the ticks whose time falls in it:
 *  counters as the difference between the last tick in it and the last tick before it. */
export function loadWindow(ticks: Tick[], from: number, to: number): LoadWindow {
  const inside = ticks.filter((t) => t.t > from && t.t <= to);
  if (inside.length === 0) throw new Error(`no load tick between ${from} and ${to}`);
  const base = [...ticks].reverse().find((t) => t.t <= from) ?? inside[0]!;
  const last = inside[inside.length - 1]!;
  const us = inside.flatMap((t) => t.allocUs).sort((a, b) => a - b);
  const allocServers: Record<string, number> = {};
  for (const s of inside.flatMap((t) => t.allocServers)) allocServers[s] = (allocServers[s] ?? 0) + 1;
  return {
    opsPerS: ((last.ops - base.ops) * 1000) / Math.max(1, last.t - base.t),
    failed: last.failed - base.failed,
    wrong: last.wrong - base.wrong,
    allocs: last.allocs - base.allocs,
    allocFailed: last.allocFailed - base.allocFailed,
    allocP50Us: us.length === 0 ? 0 : median(us),
    allocP99Us: us.length === 0 ? 0 : us[Math.min(us.length - 1, Math.floor(us.length * 0.99))]!,
    allocServers,
  };
}

async function until(done: () => boolean, timeoutMs: number, what: string): Promise<void> {
  for (const end = Date.now() + timeoutMs; !done(); await sleep(20)) {
    if (Date.now() > end) throw new Error(`outage phase: no ${what} within ${timeoutMs} ms`);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
