// start.ts — `npm start`: PD3 on a fresh machine, nothing to configure. On loopback it runs the
// pd3-kv RESP store three ways — everything local, synchronous remote reads, and full PD3 (a real
// pd3-memserver, a real pd3-agent prefetching from its packet mirror or tee proxy) — each time
// loading a dataset 100× its local cache and driving it with pd3-loadgen under YCSB-B, then prints them
// side by side and writes a chart (throughput.svg, with its Vega-Lite spec throughput.vl.json and
// data throughput.data.json beside it) to results/demo/ under the current directory, or --out DIR.
// Everything it starts is stopped, also on Ctrl-C.
import { isAbsolute, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { bars, writeChart } from './harness/charts.js';
import { CLIENT_LOAD, runKv, type Mode, type ModeResult, type RunSpec } from './harness/e2e-apps.js';
import { applyLayoutOptions, checkLayoutOptions, describeLayout, LAYOUT_OPTIONS, LAYOUT_USAGE } from './harness/core-layout.js';
import { stopAllDaemons } from './harness/processes.js';

const USAGE = `usage: npm start [-- --out DIR]   (or: node dist/examples/start.js [--out DIR])
Runs pd3-kv on loopback with everything local, with synchronous remote reads and with PD3, prints
them side by side and writes the chart throughput.svg (+ throughput.vl.json, throughput.data.json).
  --out DIR             where the chart goes (default: results/demo under the current directory)
${LAYOUT_USAGE}
  --help                this text
Environment: PD3_DEMO_RECORDS (default 50000, at least 1000), PD3_DEMO_SECONDS (default 3, per mode).`;

let options: { out: string; help: boolean; layout: string; 'host-cpus': string };
try {
  const { values } = parseArgs({
    options: {
      out: { type: 'string' },
      ...LAYOUT_OPTIONS,
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  });
  options = { out: values.out ?? 'results/demo', help: values.help ?? false, layout: values.layout, 'host-cpus': values['host-cpus'] };
  checkLayoutOptions(options);
} catch (e) {
  console.error(`${(e as Error).message}\n${USAGE}`);
  process.exit(2);
}
if (options.help) {
  console.log(USAGE);
  process.exit(0);
}
if (options.out === '') {
  console.error(`--out needs a directory\n${USAGE}`);
  process.exit(2);
}
const outDir = resolve(options.out);
let layoutLine = '';

const MODES: Array<{ mode: Mode; what: string }> = [
  { mode: 'local', what: 'all data in local memory (the upper bound)' },
  { mode: 'sync', what: '1% cached locally; a miss waits on a remote read' },
  { mode: 'pd3', what: '1% cached locally; the agent prefetches misses into the Loading Zone' },
];

// PD3_DEMO_RECORDS and PD3_DEMO_SECONDS shrink the demo (its test runs it small).
const demoRecords = Number(process.env.PD3_DEMO_RECORDS ?? 50_000);
const demoSeconds = Number(process.env.PD3_DEMO_SECONDS ?? 3);
const spec: RunSpec = {
  records: Number.isInteger(demoRecords) && demoRecords >= 1000 ? demoRecords : 50_000,
  cachePercent: 1,
  zoneBytes: 16 << 20,
  warmupMs: 1000,
  durationMs: (demoSeconds > 0 && demoSeconds <= 600 ? demoSeconds : 3) * 1000,
  mirror: 'afpacket',
  agentArgs: [],
};

/** A path as the user can type it: relative to the current directory when inside it. */
function shown(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel === '' || rel.startsWith('..') || isAbsolute(rel) ? path : rel;
}

let stopping = false;
const interrupt = (): void => {
  if (stopping) return;
  stopping = true;
  process.stdout.write('\ninterrupted: stopping everything this demo started…\n');
  void stopAllDaemons().then(() => process.exit(130));
};
process.once('SIGINT', interrupt);
process.once('SIGTERM', interrupt);

function bar(fraction: number): string {
  const width = 24;
  const full = Math.round(Math.max(0, Math.min(1, fraction)) * width);
  return `[${'#'.repeat(full)}${'.'.repeat(width - full)}]`;
}

async function runMode(mode: Mode): Promise<ModeResult> {
  let phase = 'start';
  const show = (text: string): void => {
    if (process.stdout.isTTY) process.stdout.write(`\r  ${mode.padEnd(6)} ${text.padEnd(60)}`);
  };
  show('starting memory server, agent and pd3-kv…');
  try {
    const r = await runKv(mode, spec, (step) => { phase = step; }, (p, f) => show(`${p === 'load' ? 'loading' : 'running'} ${bar(f)}`));
    if (process.stdout.isTTY) process.stdout.write(`\r${' '.repeat(70)}\r`);
    console.log(`  ${mode.padEnd(6)} ${r.kops.toFixed(1)} k requests/s, p99 ${r.p99Us.toFixed(0)} µs` +
      `${mode === 'pd3' && r.hitRate !== null ? `, ${(100 * r.hitRate).toFixed(1)}% of misses served from the Loading Zone` : ''}`);
    return r;
  } catch (e) {
    const refused = /CAP_NET_RAW|EPERM|not permitted|permission/i.test((e as Error).message);
    if (mode === 'pd3' && spec.mirror === 'afpacket' && phase === 'start' && refused) {
      if (process.stdout.isTTY) process.stdout.write('\r');
      console.log('  raw packet capture is not allowed here (no CAP_NET_RAW): the agent watches requests through its tee proxy instead');
      spec.mirror = 'tee';
      return runMode(mode);
    }
    throw e;
  }
}

async function main(): Promise<void> {
  console.log('PD3 demo: pd3-kv (a RESP key-value store) on disaggregated memory, on loopback\n');
  console.log(`${spec.records.toLocaleString('en')} records of 100 B, local cache ${spec.cachePercent}% of the data, ` +
    `YCSB-B (95% GET, 5% SET, uniform keys) from pd3-loadgen, ${CLIENT_LOAD.connections} connections × ${CLIENT_LOAD.pipeline} outstanding requests\n`);
  for (const m of MODES) console.log(`  ${m.mode.padEnd(6)} ${m.what}`);
  // The same layout for every mode (core-layout.ts).
  console.log('');
  const layout = applyLayoutOptions(options);
  layoutLine = describeLayout(layout);
  console.log('');
  const results: ModeResult[] = [];
  for (const m of MODES) {
    if (stopping) return;
    results.push(await runMode(m.mode));
  }
  const local = results.find((r) => r.mode === 'local')!;
  console.log('\n| mode   | k requests/s | vs local | p50 µs | p99 µs | misses from the Loading Zone |');
  console.log('|--------|--------------|----------|--------|--------|------------------------------|');
  for (const r of results) {
    console.log(`| ${r.mode.padEnd(6)} | ${r.kops.toFixed(1).padStart(12)} | ${(r.kops / local.kops).toFixed(2).padStart(8)} | ` +
      `${r.p50Us.toFixed(0).padStart(6)} | ${r.p99Us.toFixed(0).padStart(6)} | ` +
      `${(r.mode !== 'pd3' || r.hitRate === null ? '—' : `${(100 * r.hitRate).toFixed(1)}%`).padStart(28)} |`);
  }
  const chart = await writeChart(outDir, 'throughput', bars({
    title: `pd3-kv throughput, YCSB-B uniform, ${spec.cachePercent}% local cache`,
    subtitle: `${spec.records.toLocaleString('en')} records of 100 B, pd3-loadgen ${CLIENT_LOAD.connections} connections × ${CLIENT_LOAD.pipeline} outstanding, ` +
      `${spec.durationMs / 1000} s per mode, mirror ${spec.mirror === 'tee' ? 'tee proxy' : 'AF_PACKET'}, ${layoutLine.split(':')[0]}`,
    rows: results.map((r) => ({ mode: r.mode, kops: r.kops })),
    x: { field: 'mode', title: 'mode' },
    y: { field: 'kops', title: 'throughput (k requests/s)' },
    valueLabels: '.1f',  // as in the table
  }));
  console.log(`\nchart: ${shown(chart.svg)}`);
  console.log(`  its Vega-Lite spec (data inline): ${shown(chart.spec)}; data: ${shown(chart.data)}`);
  console.log(`mirror: ${spec.mirror === 'tee' ? 'tee proxy' : 'AF_PACKET capture'}; ${layoutLine}.`);
  console.log('Remote memory here is a memory server over loopback TCP and the "DPU" is a process on an x86 core;');
  console.log('docs/benchmarks.md ("e2e") has the full comparison with every baseline and what loopback changes.');
}

main()
  .catch((e: unknown) => {
    console.error(`\ndemo failed: ${(e as Error).message}`);
    process.exitCode = 1;
  })
  .finally(() => stopAllDaemons());
