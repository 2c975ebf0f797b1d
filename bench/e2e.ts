// e2e.ts — `npm run bench -- e2e`: the paper's §8 on this machine. Each example data system
// (pd3-kv over RESP, the C++ hash map over the binary protocol, the page server over gRPC) runs in
// every mode — local, sync, async, leap, pd3-noprefetch, pd3 — under YCSB-B with uniform keys from
// its own real client, with a local cache of 1% of the data; then sweeps of the local cache size and
// the Loading Zone size (Fig. 21, 23) for pd3-kv. Writes a table, the results as JSON and SVG charts
// to results/e2e/ (results/e2e-quick/ with --quick); the last line is the pd3-kv figures as one JSON object.
//
// Options: --quick (pd3-kv only, small, within 60 s), --apps pd3-kv,hashmap,page-server,
// --mirror afpacket|tee, --no-sweeps, --agent-args "FLAGS" (extra pd3-agent flags).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MODES, RUNNERS, type AppName, type Mode, type ModeResult, type RunSpec } from '../examples/harness/e2e-apps.js';
import { barChart, lineChart } from '../examples/harness/svg-chart.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const argv = process.argv.slice(2);
const flag = (name: string): string | undefined => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const quick = argv.includes('--quick');
const apps = (flag('--apps') ?? (quick ? 'pd3-kv' : 'pd3-kv,hashmap,page-server')).split(',') as AppName[];
for (const a of apps) if (!(a in RUNNERS)) throw new Error(`--apps: unknown app ${a} (pd3-kv, hashmap, page-server)`);
const sweeps = !quick && !argv.includes('--no-sweeps');
const outName = quick ? 'e2e-quick' : 'e2e';  // a quick run never overwrites a full run's results
const outDir = join(root, 'results', outName);

// The agent runs with its defaults: it sleeps when idle and its doorbell wakes it (busy-polling
// takes the core the app needs on this 2-core machine: docs/benchmarks.md).
const agentArgs = (flag('--agent-args') ?? '').split(' ').filter(Boolean);

const base: RunSpec = {
  records: quick ? 20000 : 200000,
  cachePercent: 1,
  zoneBytes: 16 << 20,
  warmupMs: quick ? 700 : 2000,
  durationMs: quick ? 1500 : 5000,
  mirror: flag('--mirror') === 'tee' ? 'tee' : 'afpacket',
  agentArgs,
};

const started = Date.now();
const elapsed = (): string => `${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s`;

async function run(app: AppName, mode: Mode, spec: RunSpec, label = ''): Promise<ModeResult> {
  const tag = `${app} ${mode}${label}`;
  process.stdout.write(`[${elapsed()}] ${tag.padEnd(40)}`);
  try {
    const r = await RUNNERS[app](mode, spec, (step) => process.stdout.write(` ${step}…`));
    console.log(` ${r.kops.toFixed(1)} kops/s, p99 ${r.p99Us.toFixed(0)} µs${r.hitRate !== null ? `, zone hits ${(100 * r.hitRate).toFixed(1)}%` : ''}`);
    return r;
  } catch (e) {
    if (spec.mirror === 'afpacket' && /CAP_NET_RAW|permission|EPERM|packet capture/i.test((e as Error).message)) {
      console.log(' the packet mirror is not allowed here: using the tee proxy');
      base.mirror = 'tee';
      return run(app, mode, { ...spec, mirror: 'tee' }, label);
    }
    throw e;
  }
}

const results: ModeResult[] = [];
console.log(`e2e: ${apps.join(', ')} × ${MODES.length} modes, ${base.records} records, cache ${base.cachePercent}%, ` +
  `Loading Zone ${base.zoneBytes >> 20} MiB, YCSB-B uniform, mirror ${base.mirror}`);
for (const app of apps) for (const mode of MODES) results.push(await run(app, mode, base));

// Sweeps on pd3-kv (Fig. 21: local cache size; Fig. 23: Loading Zone size).
const cacheSweep: Array<{ percent: number; mode: Mode; r: ModeResult }> = [];
const zoneSweep: Array<{ bytes: number; r: ModeResult }> = [];
if (sweeps) {
  for (const percent of [0.25, 1, 4, 16, 100]) {
    for (const mode of ['sync', 'pd3'] as const) {
      cacheSweep.push({ percent, mode, r: await run('pd3-kv', mode, { ...base, cachePercent: percent }, ` cache ${percent}%`) });
    }
  }
  for (const bytes of [64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20]) {
    zoneSweep.push({ bytes, r: await run('pd3-kv', 'pd3', { ...base, zoneBytes: bytes }, ` zone ${bytes >> 10} KiB`) });
  }
}

// ---- report ---------------------------------------------------------------------------------------

mkdirSync(outDir, { recursive: true });
const pct = (v: number | null): string => (v === null ? '—' : `${(100 * v).toFixed(1)}%`);
const lines = ['| app | mode | kops/s | p50 µs | p99 µs | zone hit rate | app CPU (cores) | errors |', '|---|---|---|---|---|---|---|---|'];
for (const r of results) {
  lines.push(`| ${r.app} | ${r.mode} | ${r.kops.toFixed(1)} | ${r.p50Us.toFixed(0)} | ${r.p99Us.toFixed(0)} | ${pct(r.hitRate)} | ${r.hostCores.toFixed(2)} | ${r.errors} |`);
}
const table = lines.join('\n');
console.log(`\n${table}\n`);
const charts: string[] = [];
const chart = (name: string, svg: string): void => {
  writeFileSync(join(outDir, name), svg);
  charts.push(join('results', outName, name));
};
const byApp = (metric: (r: ModeResult) => number) => apps.map((app) => ({
  name: app, values: MODES.map((m) => { const r = results.find((x) => x.app === app && x.mode === m); return r ? metric(r) : null; }),
}));
chart('throughput.svg', barChart({ title: 'Throughput, YCSB-B uniform, 1% local cache', yLabel: 'kops/s (log)', series: [...MODES], groups: byApp((r) => r.kops), log: true }));
chart('p99.svg', barChart({ title: 'p99 latency, YCSB-B uniform', yLabel: 'µs (log)', series: [...MODES], groups: byApp((r) => r.p99Us), log: true }));
if (sweeps) {
  const series = (['sync', 'pd3'] as const).map((mode) => ({ name: mode, points: cacheSweep.filter((c) => c.mode === mode).map((c): [number, number] => [c.percent, c.r.kops]) }));
  chart('cache-sweep.svg', lineChart({ title: 'pd3-kv throughput vs local cache (Fig. 21)', xLabel: 'local cache, % of data', yLabel: 'kops/s', series, logX: true, xFormat: (x) => `${x}%` }));
  chart('zone-sweep.svg', lineChart({ title: 'pd3-kv (pd3) vs Loading Zone size (Fig. 23)', xLabel: 'Loading Zone', yLabel: 'kops/s', logX: true,
    series: [{ name: 'throughput', points: zoneSweep.map((z): [number, number] => [z.bytes, z.r.kops]) }],
    xFormat: (x) => (x >= 1 << 20 ? `${x >> 20}M` : `${x >> 10}K`) }));
}
writeFileSync(join(outDir, 'results.json'), JSON.stringify({ spec: base, results, cacheSweep, zoneSweep }, null, 2));
writeFileSync(join(outDir, 'table.md'), `${table}\n`);
console.log(`charts: ${charts.join(', ')}; table and raw results in results/${outName}/ (${elapsed()})`);

const kv = (mode: Mode): ModeResult | undefined => results.find((r) => r.app === 'pd3-kv' && r.mode === mode);
const num = (v: number | undefined | null, digits = 1): number | null => (v === undefined || v === null ? null : Number(v.toFixed(digits)));
const pd3 = kv('pd3');
const summary = {
  pd3_kops: num(pd3?.kops),
  local_kops: num(kv('local')?.kops),
  sync_kops: num(kv('sync')?.kops),
  async_kops: num(kv('async')?.kops),
  leap_kops: num(kv('leap')?.kops),
  nopf_kops: num(kv('pd3-noprefetch')?.kops),
  pd3_hit_rate: num(pd3?.hitRate, 4),
  pd3_p99_us: num(pd3?.p99Us, 0),
  local_p99_us: num(kv('local')?.p99Us, 0),
};
if (pd3 && kv('local') && kv('sync') && kv('async')) {
  console.log(`pd3/local ${(pd3.kops / kv('local')!.kops).toFixed(2)} (target ≥ 0.9), pd3/sync ${(pd3.kops / kv('sync')!.kops).toFixed(2)} (≥ 5), ` +
    `pd3/async ${(pd3.kops / kv('async')!.kops).toFixed(2)} (≥ 2), hit rate ${pct(pd3.hitRate)} (≥ 90%), ` +
    `p99 pd3/local ${(pd3.p99Us / kv('local')!.p99Us).toFixed(2)} (≤ 1.5)`);
}
console.log(JSON.stringify(summary));
