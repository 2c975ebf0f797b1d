// pool.ts — `npm run bench -- pool`: the memory pool's figures, in four phases with real processes.
// Placement: where new regions go, by placement policy (pd3-agent --placement): power of two
// choices against random and most-free-bytes, side by side — 4 pd3-memserver, 3 pd3-agent (one per
// host segment), and one client on the host CPUs allocating regions of mixed sizes through all
// three agents; one server joins a third of the way in, another leaves (SIGKILL) two thirds in; the
// figure is the imbalance of the servers still up at the end: max ÷ mean of the bytes allocated on
// them. Tenants (bench/pool/tenants.ts): two tenants with the same keys over the same servers, read
// at once through their agents' prefetching proxies; foreign values must be 0. Reclamation
// (bench/pool/reclaim.ts): seconds from a tenant client's kill -9 until the servers have freed its
// regions. etcd outage (bench/pool/outage.ts): the data path's rate and failures before, during
// and after an etcd outage, and how soon the agent notices it and catches up. Last line: one JSON
// object. docs/benchmarks.md "pool".
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { HELP_OPTION, parseBenchCommand } from '../examples/harness/bench-command.js';
import { applyLayoutOptions, checkLayoutOptions, cpuList, layoutRecord, LAYOUT_OPTIONS, LAYOUT_USAGE, spawnOnSide } from '../examples/harness/core-layout.js';
import { median } from '../examples/harness/median.js';
import { startAgent, startMemserver, stopAllDaemons, type Daemon } from '../examples/harness/processes.js';
import { runOutagePhase, type LoadWindow, type OutagePhase } from './pool/outage.js';
import { runReclaimPhase, type ReclaimPhase } from './pool/reclaim.js';
import { runTenantPhase, type TenantPhase } from './pool/tenants.js';

const USAGE = `usage: npm run bench -- pool [--quick] [--layout split|shared] [--host-cpus LIST]
  --quick               one run of 240 allocations per policy instead of three of 1,200; 2,000 keys
                        per tenant instead of 10,000; lease TTL 2 s and grace 3 s instead of 3 s and 5 s;
                        etcd-outage windows of 2 s instead of 5 s
${LAYOUT_USAGE}`;
const args = parseBenchCommand('pool', USAGE, () => {
  const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false }, ...HELP_OPTION, ...LAYOUT_OPTIONS } });
  checkLayoutOptions(values);
  return values;
});
const quick = args.quick;
const layout = applyLayoutOptions(args);

const CLIENT = join(dirname(fileURLToPath(import.meta.url)), 'pool', 'client.js');
const POLICIES = ['p2c', 'random', 'most-free'] as const;
type Policy = (typeof POLICIES)[number];
const SERVERS = 4;
const AGENTS = 3;
const CAPACITY = '2G';
const ALLOCATIONS = quick ? 240 : 1200;
const RUNS = quick ? 1 : 3;
const JOINS = 3; // server id that starts a third of the way in
const LEAVES = 1; // server id killed two thirds of the way in
const AGENT_SETTLE_MS = 600; // agents retry a lost or absent server every 200 ms (--reconnect-ms)
const TENANT_KEYS = quick ? 2000 : 10_000;
const RECLAIM = quick ? { leaseTtlS: 2, graceS: 3, regions: 6 } : { leaseTtlS: 3, graceS: 5, regions: 12 };
const OUTAGE = quick ? { windowS: 2, leaseTtlS: 2 } : { windowS: 5, leaseTtlS: 3 };

/** What one run gives. */
interface Run {
  imbalance: number;
  bytesByServer: Record<string, number>;
  p50Us: number;
  p99Us: number;
  unavailable: number;
  refused: number;
}

async function runOnce(policy: Policy, seed: number): Promise<Run> {
  const token = randomBytes(16).toString('hex');
  const ports: number[] = [];
  const servers = new Map<number, Daemon>();
  const startServer = async (id: number): Promise<void> => {
    const d = await startMemserver({ token, serverId: id, capacity: CAPACITY, port: ports[id] ?? 0 });
    ports[id] = d.port;
    servers.set(id, d);
  };
  const agents: Daemon[] = [];
  try {
    for (let id = 0; id < SERVERS; ++id) await startServer(id);
    // The joining server's port is known now; it goes away until its turn, and the agents find it
    // then (they keep trying a server that is down).
    await servers.get(JOINS)!.stop();
    servers.delete(JOINS);

    const client = spawnOnSide('host', process.execPath, [CLIENT, '--segments', String(AGENTS), '--allocations', String(ALLOCATIONS),
      '--seed', String(seed), '--tag', `${policy}-${seed}`], { stdio: ['pipe', 'pipe', 'inherit'] });
    const out = createInterface({ input: client.stdout! })[Symbol.asyncIterator]();
    const next = async (): Promise<Record<string, unknown>> => {
      const line = await out.next();
      if (line.done) throw new Error('the pool client exited early');
      return JSON.parse(line.value) as Record<string, unknown>;
    };
    const go = (): boolean => client.stdin!.write('go\n');
    const { segments } = (await next()) as { segments: string[] };
    for (const segment of segments) {
      agents.push(await startAgent(segment, ports, token, ['--placement', policy, '--reconnect-ms', '200']));
    }
    go();
    for (;;) {
      const msg = await next();
      if (msg.pause === 'join') {
        await startServer(JOINS);
        await sleep(AGENT_SETTLE_MS);
      } else if (msg.pause === 'leave') {
        await servers.get(LEAVES)!.kill();
        servers.delete(LEAVES);
        await sleep(AGENT_SETTLE_MS);
      } else if (msg.result !== undefined) {
        const r = msg.result as Omit<Run, 'imbalance'>;
        const live = [...servers.keys()].map((id) => r.bytesByServer[String(id)] ?? 0);
        const mean = live.reduce((a, b) => a + b, 0) / live.length;
        return { ...r, imbalance: Math.max(...live) / mean };
      } else {
        throw new Error(`unexpected line from the pool client: ${JSON.stringify(msg)}`);
      }
      go();
    }
  } finally {
    await Promise.all(agents.map((a) => a.stop()));
    await Promise.all([...servers.values()].map((s) => s.stop()));
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

const round = (x: number, d = 3): number => Math.round(x * 10 ** d) / 10 ** d;

console.log(`pool: placement — ${SERVERS} memory servers of ${CAPACITY} (server ${JOINS} joins at 1/3, server ${LEAVES} leaves at 2/3), ` +
  `${AGENTS} agents, ${ALLOCATIONS} allocations of 1/4/16 MiB (70/20/10%), ${RUNS} run(s) per policy; ` +
  `tenants — alpha and beta, ${TENANT_KEYS} keys each, 3 memory servers, an agent each (--tenant, tee proxy); ` +
  `reclamation — etcd, 3 memory servers, one client killed -9 (lease TTL ${RECLAIM.leaseTtlS} s, grace ${RECLAIM.graceS} s); ` +
  `etcd outage — etcd, 3 memory servers (lease TTL ${OUTAGE.leaseTtlS} s), an agent following the pool, windows of ${OUTAGE.windowS} s`);
console.log(layout.name === 'split'
  ? `processes: CPU ${cpuList(layout.hostCpus)} (the data system's side): the allocating client, the tenants' apps, the reclamation and outage clients; ` +
    `CPU ${cpuList(layout.otherCpus)}: memory servers, agents, etcd, the RESP clients (in this driver) and this driver`
  : 'processes: nothing pinned');
const results = new Map<Policy, Run[]>(POLICIES.map((p) => [p, []]));
let tenants: TenantPhase;
let reclaim: ReclaimPhase | null;
let outage: OutagePhase | null;
try {
  for (let run = 0; run < RUNS; ++run) {
    for (const policy of POLICIES) {
      const r = await runOnce(policy, 1 + run);
      results.get(policy)!.push(r);
      const mib = Object.entries(r.bytesByServer).map(([id, b]) => `${id}:${Math.round(b / 2 ** 20)}`).join(' ');
      console.log(`  ${policy.padEnd(9)} run ${run + 1}: imbalance ${r.imbalance.toFixed(3)}  MiB by server ${mib}  ` +
        `alloc p50 ${r.p50Us.toFixed(0)} µs p99 ${r.p99Us.toFixed(0)} µs  unavailable ${r.unavailable} refused ${r.refused}`);
    }
  }
  console.log(`tenants: alpha and beta write the same ${TENANT_KEYS} keys, then read them all at once through their agents`);
  tenants = await runTenantPhase(TENANT_KEYS, console.log);
  console.log('reclamation: a tenant client with named regions is killed -9');
  reclaim = await runReclaimPhase(RECLAIM, console.log);
  console.log('etcd outage: etcd killed -9 under load through an agent that follows the pool; server 3 killed -9 during the outage; etcd started again');
  outage = await runOutagePhase(OUTAGE, console.log);
  if (outage !== null) {
    const line = (name: string, w: LoadWindow): void => console.log(`  ${name.padEnd(8)} ${Math.round(w.opsPerS)} ops/s, ${w.failed} failed, ` +
      `${w.wrong} wrong; ${w.allocs} allocations (${w.allocFailed} failed), p50 ${w.allocP50Us.toFixed(0)} µs p99 ${w.allocP99Us.toFixed(0)} µs, ` +
      `by server ${JSON.stringify(w.allocServers)}`);
    line('before', outage.before);
    line('during', outage.during);
    line('catch-up', outage.catchUp);
    line('after', outage.after);
    console.log(`  pool.etcd_down ${outage.detectMs} ms after the kill; etcd healthy again ${outage.etcdStartMs} ms after its start, ` +
      `pool.etcd_back ${outage.catchUpMs} ms after that; ` +
      `server 3 left the agent's pool ${outage.memberLeftMs} ms after it; live members that left and came back: ${outage.liveMembersFlapped}`);
    for (const e of outage.errors) console.log(`  error seen: ${e}`);
  }
} finally {
  await stopAllDaemons();
}

const summary = (p: Policy, f: (r: Run) => number): number => median(results.get(p)!.map(f));
console.log('\n| policy | imbalance (median) | alloc p50 µs | alloc p99 µs |\n|---|---|---|---|');
for (const p of POLICIES) {
  console.log(`| ${p} | ${summary(p, (r) => r.imbalance).toFixed(3)} | ${summary(p, (r) => r.p50Us).toFixed(0)} | ${summary(p, (r) => r.p99Us).toFixed(0)} |`);
}
console.log(JSON.stringify({
  ...layoutRecord(layout),
  servers: SERVERS,
  agents: AGENTS,
  allocations: ALLOCATIONS,
  runs: RUNS,
  imbalance_p2c: round(summary('p2c', (r) => r.imbalance)),
  imbalance_random: round(summary('random', (r) => r.imbalance)),
  imbalance_most_free: round(summary('most-free', (r) => r.imbalance)),
  reclaim_s: reclaim === null ? null : round(reclaim.reclaimS, 2),
  lease_ttl_s: RECLAIM.leaseTtlS,
  grace_s: RECLAIM.graceS,
  reclaimed_regions: reclaim?.reclaimedRegions ?? null,
  tenant_keys: tenants.keys,
  foreign_values: tenants.foreignValues,
  wrong_values: tenants.wrongOrMissing,
  zone_hit_ratio_tenants: round(Math.min(...Object.values(tenants.zoneHitRatio))),
  tenant_prefetches: tenants.prefetches,
  forbidden_reads: tenants.forbidden,
  foreign_region_reads: tenants.probes,
  alloc_p50_us: round(summary('p2c', (r) => r.p50Us), 1),
  alloc_p99_us: round(summary('p2c', (r) => r.p99Us), 1),
  ...outageRecord(outage),
}));

/** The etcd-outage phase's JSON fields (null figures when etcd is not installed). */
function outageRecord(o: OutagePhase | null): Record<string, number | null> {
  const w = (name: string, x: LoadWindow | null): Record<string, number | null> => ({
    [`outage_ops_per_s_${name}`]: x === null ? null : Math.round(x.opsPerS),
    [`outage_failed_ops_${name}`]: x === null ? null : x.failed + x.wrong,
    [`outage_allocs_${name}`]: x?.allocs ?? null,
    [`outage_alloc_failed_${name}`]: x?.allocFailed ?? null,
  });
  return {
    ...w('before', o?.before ?? null),
    ...w('during', o?.during ?? null),
    ...w('catch_up', o?.catchUp ?? null),
    ...w('after', o?.after ?? null),
    outage_alloc_p50_us_during: o === null ? null : round(o.during.allocP50Us, 1),
    outage_detect_ms: o?.detectMs ?? null,
    outage_etcd_start_ms: o?.etcdStartMs ?? null,
    outage_catch_up_ms: o?.catchUpMs ?? null,
    outage_member_left_ms: o?.memberLeftMs ?? null,
    outage_live_members_flapped: o?.liveMembersFlapped ?? null,
    outage_lease_ttl_s: OUTAGE.leaseTtlS,
    outage_window_s: OUTAGE.windowS,
  };
}
