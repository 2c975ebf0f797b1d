// dma.ts — `npm run bench -- dma`: how the agent's results change when every access to host memory
// costs what a DMA from a DPU would (--dma-latency-us, native/dpu/latency_dma.hpp). For each
// latency in the list ("off" = plain shared memory, uncounted) it runs the e2e benchmark's pd3 mode
// of pd3-kv (--quick size) and, without --quick, the prefetch benchmark (--quick size, direct
// issuer), passing the latency to the agent, and prints one table: e2e pd3 throughput, p99, zone
// hit rate and the agent's DMA operations per client access, and the prefetch benchmark's zone hit
// rate and lead time.
// A model, not a hardware measurement: docs/transfer-engine.md says what it charges and what not.
// Last line: one JSON object.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { HELP_OPTION, parseBenchCommand } from '../examples/harness/bench-command.js';

const USAGE = `usage: npm run bench -- dma [--quick] [--latencies LIST]
  --quick            e2e pd3 throughput only (about 10 s per latency); without it, the prefetch
                     benchmark's hit rate and lead time too (about 45 s more per latency)
  --latencies LIST   µs per DMA operation, comma-separated, each 0..1000 or "off" (shared
                     memory, nothing modelled); default off,0,1,2,5`;

/** One point of the sweep: undefined = off. */
type Latency = number | undefined;

const options = parseBenchCommand('dma', USAGE, () => {
  const { values } = parseArgs({
    options: { quick: { type: 'boolean', default: false }, latencies: { type: 'string', default: 'off,0,1,2,5' }, ...HELP_OPTION },
  });
  const latencies: Latency[] = values.latencies.split(',').map((t) => {
    if (t === 'off') return undefined;
    if (!/^\d+(\.\d+)?$/.test(t) || Number(t) > 1000) throw new Error(`--latencies: each must be off or a number from 0 to 1000, got "${t}"`);
    return Number(t);
  });
  return { ...values, parsed: latencies };
});

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const quick = options.quick;

/** Runs a compiled benchmark; resolves with its last line parsed as JSON (it exits 0) . */
function runBench(name: string, args: string[], agentArgs: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, PD3_BENCH_AGENT_ARGS: agentArgs };
    const child = spawn(process.execPath, [join(root, 'dist', 'bench', `${name}.js`), ...args], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      const last = out.trim().split('\n').pop() ?? '';
      if (code !== 0) return reject(new Error(`${name} exited ${code}: ${last}`));
      try {
        resolve(JSON.parse(last) as Record<string, unknown>);
      } catch {
        reject(new Error(`${name}: last line is not JSON: ${last}`));
      }
    });
  });
}

/** What one latency gave. */
interface Point {
  dma_latency_us: number | null;
  pd3_kops: number | null;
  pd3_p99_us: number | null;
  pd3_hit_rate: number | null;
  prefetch_hit_rate: number | null;
  prefetch_lead_p50_us: number | null;
  /** The agent's DMA operations per client access in the e2e run (null: off, nothing counted). */
  dma_ops_per_access: number | null;
  dma_reads_per_access: number | null;
  dma_atomics_per_access: number | null;
}

const num = (v: unknown): number | null => (typeof v === 'number' ? v : null);
const points: Point[] = [];
const outDir = mkdtempSync(join(tmpdir(), 'pd3-bench-dma-'));
try {
  for (const latency of options.parsed) {
    const label = latency === undefined ? 'off' : `${latency} µs`;
    const agentArgs = latency === undefined ? '' : `--dma-latency-us ${latency}`;
    console.log(`[dma ${label}] e2e pd3-kv pd3 mode…`);
    const e2e = await runBench('e2e', ['--quick', '--apps', 'pd3-kv', '--modes', 'pd3', '--no-sweeps', '--out', outDir, `--agent-args=${agentArgs}`], '');
    let prefetch: Record<string, unknown> = {};
    if (!quick) {
      console.log(`[dma ${label}] prefetch…`);
      prefetch = await runBench('prefetch', ['--quick'], agentArgs);
    }
    points.push({
      dma_latency_us: latency ?? null,
      pd3_kops: num(e2e.pd3_kops),
      pd3_p99_us: num(e2e.pd3_p99_us),
      pd3_hit_rate: num(e2e.pd3_hit_rate),
      prefetch_hit_rate: num(prefetch.direct_hit_rate),
      prefetch_lead_p50_us: num(prefetch.direct_us),
      dma_ops_per_access: num(e2e.pd3_dma_ops_per_access),
      dma_reads_per_access: num(e2e.pd3_dma_reads_per_access),
      dma_atomics_per_access: num(e2e.pd3_dma_atomics_per_access),
    });
  }
} finally {
  rmSync(outDir, { recursive: true, force: true });
}

const cell = (v: number | null, digits: number, scale = 1): string => (v === null ? '—' : (v * scale).toFixed(digits));
console.log('\nDMA latency model (a model on this machine, not a DPU measurement)');
console.log('| DMA latency | e2e pd3-kv kops/s | e2e p99 µs | e2e zone hit rate | DMA ops per client access (reads, atomics) | prefetch hit rate | prefetch lead p50 µs |');
console.log('|---|---|---|---|---|---|---|');
for (const p of points)
  console.log(
    `| ${p.dma_latency_us === null ? 'off (shared memory)' : `${p.dma_latency_us} µs`} | ${cell(p.pd3_kops, 1)} | ${cell(p.pd3_p99_us, 0)} | ` +
      `${cell(p.pd3_hit_rate, 1, 100)}% | ${p.dma_ops_per_access === null ? '—' : `${cell(p.dma_ops_per_access, 2)} (${cell(p.dma_reads_per_access, 2)}, ${cell(p.dma_atomics_per_access, 2)})`} | ` +
      `${p.prefetch_hit_rate === null ? '—' : `${cell(p.prefetch_hit_rate, 1, 100)}%`} | ${cell(p.prefetch_lead_p50_us, 1)} |`,
  );
console.log(JSON.stringify({ quick, points }));
