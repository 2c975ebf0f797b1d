// memserver.ts — `npm run bench -- memserver`: what the memory server's cache hints (--warm-ahead,
// MemStore::warm) save. Two real pd3-memserver processes, one with --warm-ahead 0 (no hints: the
// baseline) and one with the hint distance under test, serve the same load in turn: the transfer
// host program (bench/native/transfer.cpp) in direct mode, 2 threads of 64-byte writes and reads at
// random offsets of a region per thread, a window of 4,096 each. Two region sizes: one far larger
// than the caches, where every record waits for DRAM, and one that stays in the memory server's
// cache, where a hint has nothing to save and shows its own cost. The figure is the memory
// server's CPU per request (/proc/PID/stat over the run), with throughput beside it. In split
// layout (the default) the host program runs on the host CPUs and both servers on the others.
// Last line: one JSON object.
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { HELP_OPTION, integerFlag, parseBenchCommand } from '../examples/harness/bench-command.js';
import { applyLayoutOptions, checkLayoutOptions, LAYOUT_OPTIONS, LAYOUT_USAGE, onSide } from '../examples/harness/core-layout.js';
import { cpuSeconds } from '../examples/harness/cpu-meter.js';
import { runEchoing } from '../examples/harness/echo-run.js';
import { median } from '../examples/harness/median.js';
import { startMemserver } from '../examples/harness/processes.js';
import { MAX_WARM_AHEAD } from '../memserver/index.js';

const USAGE = `usage: npm run bench -- memserver [--quick] [--warm-ahead N] [--layout split|shared] [--host-cpus LIST]
  --quick               one 3 s run per configuration instead of three of 6 s
  --warm-ahead N        the hint distance compared with none (1..${MAX_WARM_AHEAD}, default 8, the server's default)
${LAYOUT_USAGE}`;
const args = parseBenchCommand('memserver', USAGE, () => {
  const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false },
    'warm-ahead': { type: 'string', default: '8' }, ...HELP_OPTION, ...LAYOUT_OPTIONS } });
  checkLayoutOptions(values);
  integerFlag('--warm-ahead', values['warm-ahead'], 1, MAX_WARM_AHEAD);
  return values;
});
const layout = applyLayoutOptions(args);

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = join(root, 'build', 'pd3_bench_transfer');
const SECONDS = args.quick ? 3 : 6;
const REPS = args.quick ? 1 : 3;
const WARM_AHEAD = Number(args['warm-ahead']);
const THREADS = 2;
const WINDOW = 4096;
/** Bytes of each host thread's region: far past the caches, and well inside the server's L2. */
const REGIONS = { large: 64 << 20, small: 128 << 10 } as const;
type RegionName = keyof typeof REGIONS;

/** The host program's report (its last line), as far as this benchmark reads it. */
interface HostReport {
  ops: number;
  errors: number;
  mops: number;
  host_cpu_ns_per_op: number;
}

/** One run: the host's report and the serving memory server's CPU per request. */
interface Run extends HostReport {
  memserverNsPerOp: number;
}

// Runs the host program against the server at `port` (pid `pid`) with `regionBytes` per thread.
async function runHost(port: number, pid: number, regionBytes: number, token: string): Promise<Run> {
  const argv = ['--mode', 'direct', '--threads', String(THREADS), '--window', String(WINDOW), '--seconds', String(SECONDS),
    '--servers', `127.0.0.1:${port}`, '--token', token, '--region-bytes', String(regionBytes)];
  const cmd = onSide(layout, 'host', BIN, argv);
  const before = cpuSeconds(pid);
  const report = (await runEchoing(cmd.file, cmd.args)) as unknown as HostReport;
  const after = cpuSeconds(pid);
  if (before === null || after === null) throw new Error(`memory server (pid ${pid}) exited during the run`);
  if (report.errors !== 0) throw new Error(`${report.errors} requests failed`);
  return { ...report, memserverNsPerOp: ((after - before) * 1e9) / report.ops };
}

const token = randomBytes(16).toString('hex');
const cold = await startMemserver({ token, capacity: '4G', extra: ['--warm-ahead', '0'] });
const warm = await startMemserver({ token, capacity: '4G', extra: ['--warm-ahead', String(WARM_AHEAD)] });
try {
  const runs = new Map<string, Run[]>();
  const key = (region: RegionName, hinted: boolean): string => `${region}/${hinted ? 'warm' : 'cold'}`;
  for (let rep = 0; rep < REPS; ++rep) {
    // Interleaved, so drift in the machine's speed hits every configuration alike.
    for (const region of Object.keys(REGIONS) as RegionName[]) {
      for (const [hinted, server] of [[false, cold], [true, warm]] as const) {
        const run = await runHost(server.port, server.child.pid!, REGIONS[region], token);
        runs.set(key(region, hinted), [...(runs.get(key(region, hinted)) ?? []), run]);
      }
    }
  }
  console.log(`memserver: 64 B writes+reads at random offsets, ${THREADS} direct-mode host threads, window ${WINDOW} each, ` +
    `${SECONDS} s x ${REPS} runs (median)`);
  const row = (region: RegionName, hinted: boolean): { mops: number; ns: number } => {
    const rs = runs.get(key(region, hinted))!;
    const r = { mops: median(rs.map((x) => x.mops)), ns: median(rs.map((x) => x.memserverNsPerOp)) };
    const name = `${region === 'large' ? `${REGIONS.large >> 20} MiB` : `${REGIONS.small >> 10} KiB`} regions, ` +
      (hinted ? `--warm-ahead ${WARM_AHEAD}` : '--warm-ahead 0 (baseline)');
    console.log(`${name.padEnd(40)} ${r.mops.toFixed(3).padStart(7)} Mops/s  ${r.ns.toFixed(0).padStart(5)} memserver ns/op  ` +
      `(runs: ${rs.map((x) => `${x.mops.toFixed(3)}/${x.memserverNsPerOp.toFixed(0)}`).join(', ')})`);
    return r;
  };
  const lc = row('large', false);
  const lw = row('large', true);
  const sc = row('small', false);
  const sw = row('small', true);
  console.log(`memory server CPU per request, hinted/none: ${(lw.ns / lc.ns).toFixed(3)} with large regions, ` +
    `${(sw.ns / sc.ns).toFixed(3)} with small ones`);
  console.log(JSON.stringify({
    layout: layout.name,
    warm_ahead: WARM_AHEAD,
    region_bytes_large: REGIONS.large,
    region_bytes_small: REGIONS.small,
    large_cold_memserver_ns_per_op: +lc.ns.toFixed(1),
    large_warm_memserver_ns_per_op: +lw.ns.toFixed(1),
    large_cold_mops: +lc.mops.toFixed(4),
    large_warm_mops: +lw.mops.toFixed(4),
    small_cold_memserver_ns_per_op: +sc.ns.toFixed(1),
    small_warm_memserver_ns_per_op: +sw.ns.toFixed(1),
    small_cold_mops: +sc.mops.toFixed(4),
    small_warm_mops: +sw.mops.toFixed(4),
    large_cpu_ratio: +(lw.ns / lc.ns).toFixed(4),
    small_cpu_ratio: +(sw.ns / sc.ns).toFixed(4),
  }));
} finally {
  await Promise.all([cold.stop(), warm.stop()]);
}
