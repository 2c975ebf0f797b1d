// load-knee.ts — the e2e client load chosen as a user would choose it: drive pd3-kv in local mode
// with pd3-loadgen over a grid of loads (connections × requests outstanding on each), find the peak
// throughput, and take the smallest load that comes within a tolerance of it. A bigger load only
// queues requests (latency up, throughput flat); a smaller one leaves the server idle between
// replies, which would understate every mode. The load found is then used for every mode and app,
// never tuned per mode (e2e-apps.ts CLIENT_LOAD).
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runLoadgen } from './loadgen.js';
import { startDaemon } from './processes.js';

const dist = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const KV_CLI = join(dist, 'examples', 'pd3-kv', 'cli.js');

/** pd3-loadgen's closed-loop load: connections × requests outstanding on each. */
export interface ClientLoad {
  connections: number;
  pipeline: number;
}

/** One load of the grid, measured: the figures of its best pass. */
export interface KneeRow extends ClientLoad {
  /** connections × pipeline: requests in flight at any time. */
  outstanding: number;
  kops: number;
  /** kops of every pass, in order (the spread shows how noisy the machine was). */
  passKops: number[];
  p50Us: number;
  p99Us: number;
  errors: number;
}

/** The grid's peak and the smallest load within `tolerance` of it. */
export interface Knee {
  peak: KneeRow;
  knee: KneeRow;
  /** A fraction: 0.1 = within 10% of the peak. */
  tolerance: number;
}

/** Every connections × pipeline pair, smallest first: by requests outstanding, then (equal
 *  outstanding) by fewer connections, since a connection costs the server more than a deeper pipe. */
export function loadGrid(connections: readonly number[], pipelines: readonly number[]): ClientLoad[] {
  const grid = connections.flatMap((c) => pipelines.map((p): ClientLoad => ({ connections: c, pipeline: p })));
  return grid.sort((a, b) => a.connections * a.pipeline - b.connections * b.pipeline || a.connections - b.connections);
}

/** The peak of `rows` and the first row (in grid order: loadGrid's) with kops ≥ (1 − tolerance) × peak. */
export function findKnee(rows: readonly KneeRow[], tolerance = 0.1): Knee {
  if (rows.length === 0) throw new Error('findKnee: no rows');
  if (!(tolerance >= 0 && tolerance < 1)) throw new Error(`findKnee: tolerance must be in [0, 1), got ${tolerance}`);
  const peak = rows.reduce((best, r) => (r.kops > best.kops ? r : best));
  // The peak itself qualifies, so there always is a knee.
  const knee = rows.find((r) => r.kops >= (1 - tolerance) * peak.kops)!;
  return { peak, knee, tolerance };
}

/** Sizes and timing of a knee search. */
export interface KneeSpec {
  records: number;
  warmupMs: number;
  durationMs: number;
  /** Times the whole grid is run; each load keeps its best pass. */
  passes: number;
}

/** Measures pd3-kv in local mode (on the host side of the core layout in force) under YCSB-B uniform
 *  at each load of `grid`, `spec.passes` times over the grid in order; each row is the load's best
 *  pass. Best, not mean: a short run only ever loses throughput to something else taking the CPU
 *  (on a shared machine, another job), so the best pass is the closest to what the load can get, and
 *  running the grid again rather than each load twice in a row puts a burst of interference on
 *  different loads in each pass. One server and one load phase for everything: B writes only
 *  existing keys, so each run finds the same key set, and a fresh server per load would add nothing
 *  but start-up time. `onRun` sees each run as it is measured. */
export async function measureLoads(grid: readonly ClientLoad[], spec: KneeSpec,
  onRun?: (run: Omit<KneeRow, 'passKops'>, pass: number) => void): Promise<KneeRow[]> {
  if (!(Number.isInteger(spec.passes) && spec.passes >= 1)) throw new Error(`measureLoads: passes must be a positive integer, got ${spec.passes}`);
  const valueSize = 100;  // as runKv
  const kv = await startDaemon(KV_CLI, ['--listen', '127.0.0.1:0', '--mode', 'local', '--page-size', '4K', '--log-level', 'info'],
    randomBytes(16).toString('hex'), { side: 'host' });
  try {
    const port = Number(kv.ready.port);
    await runLoadgen({ port, load: true, operations: 0, records: spec.records, valueSize, connections: 4, pipeline: 16 });
    const rows: Array<KneeRow | null> = grid.map(() => null);
    let seed = 7;
    for (let pass = 1; pass <= spec.passes; ++pass) {
      for (const [i, load] of grid.entries()) {
        const r = await runLoadgen({ port, workload: 'B', distribution: 'uniform', records: spec.records, valueSize, seed: seed++,
          connections: load.connections, pipeline: load.pipeline, warmupS: spec.warmupMs / 1000, durationS: spec.durationMs / 1000 });
        const run = { connections: r.connections, pipeline: r.pipeline, outstanding: r.connections * r.pipeline,
          kops: r.kops, p50Us: r.p50Us, p99Us: r.p99Us, errors: r.errors };
        onRun?.(run, pass);
        const before = rows[i] ?? null;
        const best = before === null || r.kops > before.kops ? run : before;
        // Errors of every pass count: a load that got errors in any pass is not a clean load.
        rows[i] = { ...best, errors: run.errors + (before?.errors ?? 0), passKops: [...(before?.passKops ?? []), r.kops] };
      }
    }
    return rows.map((r) => r!);
  } finally {
    await kv.stop();
  }
}

/** pd3-loadgen's bounds on --connections and --pipeline (bench/loadgen/options.cpp). */
const MAX_CONNECTIONS = 1024;
const MAX_PIPELINE = 4096;

/** Parses a grid "CONNECTIONS:PIPELINES", each a comma list of integers (e.g. "1,2,4,8:1,8,32");
 *  throws naming what is wrong. */
export function parseLoadGrid(text: string): { connections: number[]; pipelines: number[] } {
  const halves = text.split(':');
  if (halves.length !== 2) throw new Error(`--load-grid: expected CONNECTIONS:PIPELINES like 1,2,4,8:1,2,4,8,16,32, got '${text}'`);
  const list = (part: string, what: string, max: number): number[] => {
    const values = part.split(',').map((v) => {
      if (!/^\d{1,5}$/.test(v.trim()) || Number(v) < 1 || Number(v) > max) {
        throw new Error(`--load-grid: ${what} must be integers in 1..${max}, got '${v}' in '${text}'`);
      }
      return Number(v);
    });
    return [...new Set(values)];
  };
  return { connections: list(halves[0]!, 'connections', MAX_CONNECTIONS), pipelines: list(halves[1]!, 'pipelines', MAX_PIPELINE) };
}

/** The table of a knee search (markdown: one row per load in grid order, the knee and the peak
 *  marked) and its one-line summary. */
export function kneeTable(rows: readonly KneeRow[], { peak, knee, tolerance }: Knee): string {
  const lines = [
    '| connections | pipeline | outstanding | kops/s (best pass) | of peak | each pass kops/s | p50 µs | p99 µs | errors | |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    const mark = [r === knee ? `knee (smallest within ${Math.round(tolerance * 100)}% of the peak)` : '', r === peak ? 'peak' : '']
      .filter(Boolean).join(', ');
    lines.push(`| ${r.connections} | ${r.pipeline} | ${r.outstanding} | ${r.kops.toFixed(1)} | ${((100 * r.kops) / peak.kops).toFixed(0)}% | ` +
      `${r.passKops.map((k) => k.toFixed(1)).join(', ')} | ` +
      `${r.p50Us.toFixed(0)} | ${r.p99Us.toFixed(0)} | ${r.errors} | ${mark} |`);
  }
  return lines.join('\n');
}
