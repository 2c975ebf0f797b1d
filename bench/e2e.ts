// e2e.ts — `npm run bench -- e2e`: the paper's §8 on this machine. Each example data system
// (pd3-kv over RESP, the C++ hash map over the binary protocol, the page server over gRPC) runs in
// every mode — local, sync, async, leap, pd3-noprefetch, pd3 — under YCSB-B with uniform keys from
// a real client (pd3-loadgen at one load, CLIENT_LOAD, for pd3-kv and the hash map; the page
// server's gRPC client), with a local cache of 1% of the data; then sweeps of the local cache size
// and the Loading Zone size (Fig. 21, 23) for pd3-kv. Writes a table, the results as JSON and charts
// (each as NAME.svg, its Vega-Lite spec NAME.vl.json and its data NAME.data.json: charts.ts) to
// results/e2e/ (results/e2e-quick/ with --quick) or --out DIR; the last line is the pd3-kv figures
// as one JSON object. --find-load instead finds that client load (load-knee.ts) and writes
// load-knee.json.
//
// Options: --help lists them (USAGE below).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CLIENT_LOAD, MODES, RUNNERS, type AppName, type Mode, type ModeResult, type RunSpec } from '../examples/harness/e2e-apps.js';
import { findKnee, kneeTable, loadGrid, measureLoads, parseLoadGrid, type ClientLoad } from '../examples/harness/load-knee.js';
import { groupedBars, lines, writeChart, type ChartRow, type ChartSpec } from '../examples/harness/charts.js';
import { applyLayoutOptions, checkLayoutOptions, layoutRecord, LAYOUT_OPTIONS, LAYOUT_USAGE, SHARED, type CoreLayout } from '../examples/harness/core-layout.js';

const DEFAULT_GRID = '1,2,4,8:1,2,4,8,16,32';
const USAGE = `usage: npm run bench -- e2e [options]
  --quick               pd3-kv only, small, within 60 s (results/e2e-quick/)
  --apps A,B            apps to run: pd3-kv, hashmap, page-server (default: all; --quick: pd3-kv)
  --modes A,B           modes to run (default: all six: local, sync, async, leap, pd3-noprefetch, pd3)
${LAYOUT_USAGE}
  --mirror afpacket|tee|dpdk how the agent sees requests (default afpacket; tee where raw sockets are refused;
                        dpdk: DPDK's af_packet driver on lo, and pd3-kv's pd3 mode also with afpacket and
                        tee beside it)
  --no-sweeps           skip the local cache and Loading Zone sweeps
  --zone-wait-us N      every app in pd3 mode: how long a zone miss waits for its prefetch (default: each
                        app's: pd3-kv and the page server adapt it to how long items take to land; the hash map does
                        not wait, 0)
  --mem-dram-budget SIZE start the memory server with the SSD tier: a temporary --data-dir and this
                        --dram-budget (docs/tier.md), e.g. 64M; default: regions in DRAM
  --mem-sync none|batch with --mem-dram-budget: the memory server's --sync (default batch)
  --mem-page-size SIZE  with --mem-dram-budget: the tier's --page-size, 4K to 2M (default: the memory
                        server's, 64K)
  --agent-args="FLAGS" extra pd3-agent flags (with the =: they begin with a dash)
  --out DIR             where results and charts go (default results/e2e or results/e2e-quick)
  --replot FILE         run nothing: redraw the charts of FILE (a results.json) into --out (default: FILE's folder)
  --find-load           run no modes: find the client load as a user would, the smallest (connections ×
                        pipeline) that brings pd3-kv's local mode within 10% of its peak over a grid
                        (20,000 records, best of 2 passes of 1 s per load); writes load-knee.json
                        into --out (default results/e2e)
  --load-grid C:P       with --find-load: the connections and pipelines tried (default ${DEFAULT_GRID})
  --help                this text`;

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const usageError = (why: string): never => {
  console.error(`e2e: ${why}\n${USAGE}`);
  process.exit(2);
};
/** The command line, checked: any bad option exits 2 with the reason and the usage. */
function parseOptions() {
  try {
    const { values } = parseArgs({
      args: process.argv.slice(2),
      strict: true,
      options: {
        quick: { type: 'boolean', default: false },
        apps: { type: 'string' },
        modes: { type: 'string' },
        ...LAYOUT_OPTIONS,
        mirror: { type: 'string', default: 'afpacket' },
        'no-sweeps': { type: 'boolean', default: false },
        'agent-args': { type: 'string', default: '' },
        'zone-wait-us': { type: 'string' },
        'mem-dram-budget': { type: 'string' },
        'mem-sync': { type: 'string' },
        'mem-page-size': { type: 'string' },
        out: { type: 'string' },
        replot: { type: 'string' },
        'find-load': { type: 'boolean', default: false },
        'load-grid': { type: 'string' },
        help: { type: 'boolean', default: false },
      },
    });
    if (values.mirror !== 'afpacket' && values.mirror !== 'tee' && values.mirror !== 'dpdk')
      throw new Error(`--mirror: afpacket, tee or dpdk, got '${values.mirror}'`);
    checkLayoutOptions(values);
    const wait = values['zone-wait-us'];
    if (wait !== undefined && !/^\d{1,7}$/.test(wait)) throw new Error(`--zone-wait-us: a whole number of µs, got '${wait}'`);
    if (values['load-grid'] !== undefined && !values['find-load']) throw new Error('--load-grid: only with --find-load');
    const budget = values['mem-dram-budget'];
    if (budget !== undefined && !/^\d+[KMG]?$/.test(budget)) throw new Error(`--mem-dram-budget: a size like 64M, got '${budget}'`);
    const sync = values['mem-sync'];
    if (sync !== undefined && (budget === undefined || (sync !== 'none' && sync !== 'batch')))
      throw new Error(`--mem-sync: none or batch, with --mem-dram-budget; got '${sync}'`);
    const page = values['mem-page-size'];
    // The memory server checks the power of two and the range itself, and exits 2 naming them.
    if (page !== undefined && (budget === undefined || !/^\d+[KM]?$/.test(page)))
      throw new Error(`--mem-page-size: a size like 4K, with --mem-dram-budget; got '${page}'`);
    if (values['find-load']) {
      // The knee is defined on pd3-kv's local mode at its own sizes: options that choose otherwise contradict it.
      for (const flag of ['quick', 'apps', 'modes', 'replot'] as const) {
        if (values[flag] !== undefined && values[flag] !== false) throw new Error(`--find-load: runs pd3-kv in local mode at its own sizes; --${flag} does not go with it`);
      }
      parseLoadGrid(values['load-grid'] ?? DEFAULT_GRID);
    }
    return values;
  } catch (e) {
    return usageError((e as Error).message);
  }
}
const opts = parseOptions();
if (opts.help) {
  console.log(USAGE);
  process.exit(0);
}
const quick = opts.quick;
const apps = (opts.apps ?? (quick ? 'pd3-kv' : 'pd3-kv,hashmap,page-server')).split(',') as AppName[];
for (const a of apps) if (!(a in RUNNERS)) usageError(`--apps: unknown app '${a}' (pd3-kv, hashmap, page-server)`);
const modes = (opts.modes?.split(',') ?? [...MODES]) as Mode[];
for (const m of modes) if (!(MODES as readonly string[]).includes(m)) usageError(`--modes: unknown mode '${m}' (${MODES.join(', ')})`);
const sweeps = !quick && !opts['no-sweeps'];
const replot = opts.replot;
// A quick run never overwrites a full run's results.
const outDir = resolve(opts.out ?? (replot ? dirname(resolve(replot)) : join(root, 'results', quick ? 'e2e-quick' : 'e2e')));
const shown = (path: string): string => {
  const rel = relative(process.cwd(), path);
  return rel.startsWith('..') || isAbsolute(rel) ? path : rel;
};

// The agent runs with its defaults: it sleeps when idle and its doorbell wakes it (busy-polling
// takes the core the app needs on this 2-core machine: docs/benchmarks.md).
const agentArgs = opts['agent-args'].split(' ').filter(Boolean);

const base: RunSpec = {
  records: quick ? 20000 : 200000,
  cachePercent: 1,
  zoneBytes: 16 << 20,
  warmupMs: quick ? 700 : 2000,
  durationMs: quick ? 1500 : 5000,
  mirror: opts.mirror as 'afpacket' | 'tee' | 'dpdk',
  agentArgs,
  ...(opts['zone-wait-us'] !== undefined ? { zoneWaitUs: Number(opts['zone-wait-us']) } : {}),
  ...(opts['mem-dram-budget'] !== undefined ? { memDramBudget: opts['mem-dram-budget'] } : {}),
  ...(opts['mem-sync'] !== undefined ? { memSync: opts['mem-sync'] as 'none' | 'batch' } : {}),
  ...(opts['mem-page-size'] !== undefined ? { memPageSize: opts['mem-page-size'] } : {}),
};

// ---- charts ---------------------------------------------------------------------------------------

/** What results.json holds; --replot reads it back. */
interface E2eResults {
  spec: RunSpec;
  /** The core layout (core-layout.ts layoutRecord); absent in results from before it existed. */
  layout?: Record<string, unknown>;
  /** The one client load of pd3-kv and the hash map in every mode (each result also records the
   *  load its run reported); absent in results from before it was recorded. */
  client?: { tool: 'pd3-loadgen'; apps: AppName[]; connections: number; pipeline: number };
  results: ModeResult[];
  cacheSweep: Array<{ percent: number; mode: Mode; r: ModeResult }>;
  zoneSweep: Array<{ bytes: number; r: ModeResult }>;
}

/** ", memory server tiered: …" for a run on the SSD tier; nothing for regions in DRAM. */
const memoryServerSetting = (spec: RunSpec): string => (spec.memDramBudget === undefined ? ''
  : `, memory server tiered: ${spec.memDramBudget} DRAM, --sync ${spec.memSync ?? 'batch'}, ${spec.memPageSize ?? '64K'} pages`);
const sizeLabel = (bytes: number): string => (bytes >= 1 << 20 ? `${bytes / (1 << 20)} MiB` : `${bytes / 1024} KiB`);

/** Draws throughput, p99 and (with sweep results) the cache and zone sweeps into `dir`; returns the SVG paths. */
async function drawCharts(dir: string, data: E2eResults): Promise<string[]> {
  const { spec, results, cacheSweep, zoneSweep } = data;
  // Results from before the core layout existed were run shared.
  const layoutName = typeof data.layout?.name === 'string' ? data.layout.name : 'shared';
  const ran = [...new Set(results.map((r) => r.app))];
  const setting = `${spec.records.toLocaleString('en')} records, Loading Zone ${sizeLabel(spec.zoneBytes)}, ` +
    `${spec.durationMs / 1000} s per run, mirror ${spec.mirror}, layout ${layoutName}` +
    memoryServerSetting(spec);
  // Log scales: a mode that did not run, or measured 0 (every request failed), is drawn as no bar.
  const byApp = (field: string, metric: (r: ModeResult) => number): ChartRow[] => ran.flatMap((app) => MODES.map((mode): ChartRow => {
    const r = results.find((x) => x.app === app && x.mode === mode);
    const v = r ? metric(r) : null;
    if (v !== null && !(v > 0)) console.log(`note: ${field} of ${app} ${mode} is ${v}: no bar on the log scale`);
    return { app, mode, [field]: v !== null && v > 0 ? v : null };
  }));
  const svgs: string[] = [];
  const draw = async (name: string, chart: ChartSpec): Promise<void> => {
    svgs.push((await writeChart(dir, name, chart)).svg);
  };
  await draw('throughput', groupedBars({
    title: `Throughput, YCSB-B uniform, ${spec.cachePercent}% local cache`, subtitle: setting,
    rows: byApp('kops', (r) => r.kops),
    x: { field: 'app', title: 'app', order: ran }, color: { field: 'mode', title: 'mode', order: [...MODES] },
    y: { field: 'kops', title: 'throughput (kops/s, log scale)', log: true },
  }));
  await draw('p99', groupedBars({
    title: `p99 latency, YCSB-B uniform, ${spec.cachePercent}% local cache`, subtitle: setting,
    rows: byApp('p99_us', (r) => r.p99Us),
    x: { field: 'app', title: 'app', order: ran }, color: { field: 'mode', title: 'mode', order: [...MODES] },
    y: { field: 'p99_us', title: 'p99 latency (µs, log scale)', log: true },
  }));
  const sweepSetting = `YCSB-B uniform, ${spec.records.toLocaleString('en')} records, ${spec.durationMs / 1000} s per run, layout ${layoutName}`;
  if (cacheSweep.length > 0) {
    await draw('cache-sweep', lines({
      title: 'pd3-kv throughput vs local cache size (Fig. 21)', subtitle: `${sweepSetting}, Loading Zone ${sizeLabel(spec.zoneBytes)}`,
      rows: cacheSweep.map((c): ChartRow => ({ cache_percent: c.percent, mode: c.mode, kops: c.r.kops })),
      x: { field: 'cache_percent', title: 'local cache (% of the data, log scale)', log: true, tickLabel: (x) => `${x}%` },
      y: { field: 'kops', title: 'throughput (kops/s)' },
      color: { field: 'mode', title: 'mode', order: ['sync', 'pd3'] },
    }));
  }
  if (zoneSweep.length > 0) {
    await draw('zone-sweep', lines({
      title: 'pd3-kv throughput vs Loading Zone size (Fig. 23)', subtitle: `${sweepSetting}, ${spec.cachePercent}% local cache`,
      rows: zoneSweep.map((z): ChartRow => ({ zone_bytes: z.bytes, mode: 'pd3', kops: z.r.kops })),
      x: { field: 'zone_bytes', title: 'Loading Zone size (log scale)', log: true, tickLabel: sizeLabel },
      y: { field: 'kops', title: 'throughput (kops/s)' },
      color: { field: 'mode', title: 'mode' },
    }));
  }
  return svgs;
}

if (replot) {
  const data = JSON.parse(readFileSync(replot, 'utf8')) as E2eResults;
  const svgs = await drawCharts(outDir, data);
  console.log(`charts: ${svgs.map(shown).join(', ')} (each with .vl.json and .data.json beside it)`);
  process.exit(0);
}

// ---- runs -----------------------------------------------------------------------------------------

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

// The same layout for every mode: the data system on the host CPUs, the rest on the others.
let layout: CoreLayout = SHARED;
try {
  layout = applyLayoutOptions(opts);
} catch (e) {
  usageError((e as Error).message);
}

if (opts['find-load']) {
  await findLoad();
  process.exit(0);
}

/** --find-load: pd3-kv local over the grid; prints the table and writes load-knee.json. */
async function findLoad(): Promise<void> {
  const { connections, pipelines } = parseLoadGrid(opts['load-grid'] ?? DEFAULT_GRID);
  const grid = loadGrid(connections, pipelines);
  const spec = { records: 20000, warmupMs: 300, durationMs: 1000, passes: 2 };
  console.log(`e2e --find-load: pd3-kv local, YCSB-B uniform, ${spec.records} records, ${grid.length} loads × ` +
    `(${spec.warmupMs / 1000} s warm-up + ${spec.durationMs / 1000} s) × ${spec.passes} passes (best kept), pd3-loadgen`);
  const rows = await measureLoads(grid, spec, (r, pass) =>
    console.log(`[${elapsed()}] pass ${pass} ${r.connections} × ${r.pipeline}`.padEnd(30) + ` ${r.kops.toFixed(1)} kops/s, p99 ${r.p99Us.toFixed(0)} µs`));
  const knee = findKnee(rows, 0.1);
  console.log(`\n${kneeTable(rows, knee)}\n`);
  const load = (l: ClientLoad): string => `${l.connections}x${l.pipeline}`;
  if (load(knee.knee) !== load(CLIENT_LOAD)) {
    console.log(`note: the e2e runs use ${load(CLIENT_LOAD)} (CLIENT_LOAD in examples/harness/e2e-apps.ts); this machine's knee is ${load(knee.knee)}`);
  }
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, 'load-knee.json');
  writeFileSync(file, JSON.stringify({ app: 'pd3-kv', mode: 'local', workload: 'B', distribution: 'uniform', ...spec,
    layout: layoutRecord(layout), tolerance: knee.tolerance, clientLoadInUse: CLIENT_LOAD, peak: knee.peak, knee: knee.knee, rows }, null, 2));
  console.log(`written: ${shown(file)} (${elapsed()})`);
  console.log(JSON.stringify({ layout: layout.name, knee_connections: knee.knee.connections, knee_pipeline: knee.knee.pipeline,
    knee_outstanding: knee.knee.outstanding, knee_kops: Number(knee.knee.kops.toFixed(1)), peak_connections: knee.peak.connections,
    peak_pipeline: knee.peak.pipeline, peak_kops: Number(knee.peak.kops.toFixed(1)), tolerance: knee.tolerance,
    client_load_in_use: load(CLIENT_LOAD) }));
}

const pct = (v: number | null): string => (v === null ? '—' : `${(100 * v).toFixed(1)}%`);
const us = (v: number | null): string => (v === null ? '—' : v.toFixed(1));
const results: ModeResult[] = [];
const clientLine = `pd3-loadgen ${CLIENT_LOAD.connections} connections × ${CLIENT_LOAD.pipeline} outstanding (pd3-kv, hashmap)`;
console.log(`e2e: ${apps.join(', ')} × ${modes.length} modes, ${base.records} records, cache ${base.cachePercent}%, ` +
  `Loading Zone ${base.zoneBytes >> 20} MiB, YCSB-B uniform, mirror ${base.mirror}, client ${clientLine}${memoryServerSetting(base)}`);
for (const app of apps) for (const mode of modes) results.push(await run(app, mode, base));
// --mirror dpdk: pd3-kv's pd3 mode with the other backends too, same layout and load, beside it.
const backends: Array<{ mirror: string; r: ModeResult }> = [];
if (base.mirror === 'dpdk' && modes.includes('pd3') && apps.includes('pd3-kv')) {
  for (const mirror of ['afpacket', 'tee'] as const) {
    backends.push({ mirror, r: await run('pd3-kv', 'pd3', { ...base, mirror }, ` [${mirror}]`) });
  }
  const own = results.find((r) => r.app === 'pd3-kv' && r.mode === 'pd3');
  if (own) backends.push({ mirror: 'dpdk', r: own });
  console.log('\npd3-kv pd3 by mirror backend:');
  for (const b of backends) {
    console.log(`  ${b.mirror.padEnd(9)} ${b.r.kops.toFixed(1).padStart(7)} kops/s  p99 ${b.r.p99Us.toFixed(0).padStart(6)} µs  ` +
      `zone hits ${pct(b.r.hitRate)}  DPU CPU ${us(b.r.dpuCpuUsPerOp)} µs/op`);
  }
}

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
const tableLines = [
  '| app | mode | kops/s | p50 µs | p99 µs | zone hit rate | app CPU (cores) | host CPU µs/op | DPU CPU µs/op | memserver CPU µs/op | remote read µs | errors |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|',
];
for (const r of results) {
  tableLines.push(`| ${r.app} | ${r.mode} | ${r.kops.toFixed(1)} | ${r.p50Us.toFixed(0)} | ${r.p99Us.toFixed(0)} | ${pct(r.hitRate)} | ` +
    `${r.hostCores.toFixed(2)} | ${us(r.hostCpuUsPerOp)} | ${us(r.dpuCpuUsPerOp)} | ${us(r.memserverCpuUsPerOp)} | ${us(r.remoteReadUs ?? null)} | ${r.errors} |`);
}
const table = tableLines.join('\n');
console.log(`\n${table}\n`);
const all: E2eResults = { spec: base, layout: layoutRecord(layout),
  client: { tool: 'pd3-loadgen', apps: ['pd3-kv', 'hashmap'], ...CLIENT_LOAD }, results, cacheSweep, zoneSweep };
writeFileSync(join(outDir, 'results.json'), JSON.stringify(all, null, 2));
writeFileSync(join(outDir, 'table.md'), `${table}\n\nclient: ${clientLine}\n`);
const svgs = await drawCharts(outDir, all);
console.log(`charts: ${svgs.map(shown).join(', ')} (each with .vl.json and .data.json beside it); ` +
  `table and raw results in ${shown(outDir)}/ (${elapsed()})`);

const kv = (mode: Mode): ModeResult | undefined => results.find((r) => r.app === 'pd3-kv' && r.mode === mode);
const num = (v: number | undefined | null, digits = 1): number | null => (v === undefined || v === null ? null : Number(v.toFixed(digits)));
const pd3 = kv('pd3');
const summary = {
  layout: layout.name,
  pd3_kops: num(pd3?.kops),
  local_kops: num(kv('local')?.kops),
  sync_kops: num(kv('sync')?.kops),
  async_kops: num(kv('async')?.kops),
  leap_kops: num(kv('leap')?.kops),
  nopf_kops: num(kv('pd3-noprefetch')?.kops),
  pd3_hit_rate: num(pd3?.hitRate, 4),
  pd3_p99_us: num(pd3?.p99Us, 0),
  local_p99_us: num(kv('local')?.p99Us, 0),
  pd3_host_cpu_us_per_op: num(pd3?.hostCpuUsPerOp, 2),
  local_host_cpu_us_per_op: num(kv('local')?.hostCpuUsPerOp, 2),
  sync_host_cpu_us_per_op: num(kv('sync')?.hostCpuUsPerOp, 2),
  async_host_cpu_us_per_op: num(kv('async')?.hostCpuUsPerOp, 2),
  pd3_dpu_cpu_us_per_op: num(pd3?.dpuCpuUsPerOp, 2),
  pd3_memserver_cpu_us_per_op: num(pd3?.memserverCpuUsPerOp, 2),
  // A read through the agent against a direct read, each at its mode's load (issue 12 item 5).
  sync_remote_read_us: num(kv('sync')?.remoteReadUs),
  nopf_remote_read_us: num(kv('pd3-noprefetch')?.remoteReadUs),
  pd3_remote_read_us: num(pd3?.remoteReadUs),
  // With --agent-args=--dma-latency-us N: the agent's DMA operations per client access (null otherwise).
  pd3_dma_ops_per_access: num(pd3?.dmaPerAccess?.total, 2),
  pd3_dma_reads_per_access: num(pd3?.dmaPerAccess?.reads, 2),
  pd3_dma_atomics_per_access: num(pd3?.dmaPerAccess?.atomics, 2),
  mirror: base.mirror,
  // --mirror dpdk: pd3-kv pd3 with each backend (kops/s, zone hit rate).
  ...Object.fromEntries(backends.flatMap((b) => [[`pd3_${b.mirror}_kops`, num(b.r.kops)], [`pd3_${b.mirror}_hit_rate`, num(b.r.hitRate, 4)]])),
};
if (pd3 && kv('local') && kv('sync') && kv('async')) {
  console.log(`pd3/local ${(pd3.kops / kv('local')!.kops).toFixed(2)} (target ≥ 0.6), pd3/sync ${(pd3.kops / kv('sync')!.kops).toFixed(2)} (≥ 3), ` +
    `pd3/async ${(pd3.kops / kv('async')!.kops).toFixed(2)} (≥ 1.5), hit rate ${pct(pd3.hitRate)} (≥ 95%), ` +
    `p99 pd3/local ${(pd3.p99Us / kv('local')!.p99Us).toFixed(2)} (≤ 2)`);
}
console.log(JSON.stringify(summary));
