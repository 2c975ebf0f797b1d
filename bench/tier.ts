// tier.ts — `npm run bench -- tier [--quick]`: the SSD tier's eviction policies (docs/tier-policies.md).
// Part 1, the offline simulator (bench/native/tier.cpp, on the "other" core of core-layout.ts, where
// the memory server runs): page traces (YCSB-C zipfian and uniform, YCSB-E scans, YCSB-A zipfian
// with writes) over a data set 4x the pool, replayed through each policy's real class and through
// Belady's optimum: hit ratio, CPU per access, write-backs, on a virtual clock (a hit --hit-ns, a
// miss --miss-ns; the epoch sampler's periods follow it) and, for comparison, unpaced (the replay's
// own wall-clock pace, epoch's sampler thread); it writes the registration trace of the
// lru/zipfian fills, kept with --trace-out FILE for `bench mrrc --trace FILE` (without it, into a
// temporary directory removed at exit: `bench mrrc` records its own).
// Part 2, the real tier: one pd3-memserver per policy (--dram-budget, --evict; on the "other" core),
// a region 4x the budget filled, then a YCSB-C zipfian stream of page reads from this process (the
// client, pinned to the host core in split layout) through the direct transport at a fixed concurrency: throughput, p99,
// and the hit ratio from the server's tier metrics over the read phase.
// Last line: one JSON object (the simulator's fields, then real_<policy>_{kops,p99_us,hit}).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { tempDirRemovedAtExit } from '../examples/harness/temp-dir.js';
import { runEchoing, type JsonObject, type JsonValue } from '../examples/harness/echo-run.js';
import { applyLayoutOptions, LAYOUT_OPTIONS, LAYOUT_USAGE, onSide, pinThisProcess, type CoreLayout } from '../examples/harness/core-layout.js';
import { startMemserver } from '../examples/harness/processes.js';
import { Pd3Host } from '../host/index.js';
import { Workload } from '../workloads/ycsb.js';

const POLICIES = ['lru', 'fifo', 'random', 'cflru', 'epoch'] as const;
const USAGE = `usage: npm run bench -- tier [--quick] [--trace-out FILE] [--no-real] [--seconds S] [--concurrency N]
  --quick            simulator at 16,384 frames / 2M accesses per workload; real tier with an 8 MiB
                     budget, 2 s per policy
  --trace-out FILE   keep the registration trace there (default: not kept)
  --no-real          the simulator only
  --hit-ns H         the simulator's virtual time of a hit (default 1000)
  --miss-ns M        the simulator's virtual time of a miss, a page read (default 50000: ~ the
                     tier-io bench's io_uring row on the development VM)
  --seconds S        read phase per real policy (default 8, --quick 2)
  --concurrency N    reads in flight against the real tier (default 16)
${LAYOUT_USAGE}`;

interface Options {
  quick: boolean;
  clock: string[];  // the simulator's --hit-ns / --miss-ns, when given
  traceOut: string;
  keepTrace: boolean;  // --trace-out was given; otherwise traceOut is in a directory removed at exit
  real: boolean;
  seconds: number;
  concurrency: number;
  layout: CoreLayout;
}

function options(): Options {
  try {
    const { values } = parseArgs({
      args: process.argv.slice(2),
      strict: true,
      options: {
        quick: { type: 'boolean', default: false },
        'trace-out': { type: 'string' },
        'no-real': { type: 'boolean', default: false },
        'hit-ns': { type: 'string' },
        'miss-ns': { type: 'string' },
        seconds: { type: 'string' },
        concurrency: { type: 'string', default: '16' },
        help: { type: 'boolean', default: false },
        ...LAYOUT_OPTIONS,
      },
    });
    if (values.help) {
      console.log(USAGE);
      process.exit(0);
    }
    const seconds = Number(values.seconds ?? (values.quick ? 2 : 8));
    if (!(seconds > 0 && seconds <= 600)) throw new Error(`--seconds: 0 < S <= 600, got '${values.seconds}'`);
    const concurrency = Number(values.concurrency);
    if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 1024) throw new Error(`--concurrency: 1..1024, got '${values.concurrency}'`);
    const keepTrace = values['trace-out'] !== undefined;
    const traceOut = values['trace-out'] ?? join(tempDirRemovedAtExit('pd3-bench-tier-'), 'registrations.txt');
    const layout = applyLayoutOptions(values);
    const clock: string[] = [];
    for (const flag of ['hit-ns', 'miss-ns'] as const) {
      const text = values[flag];
      if (text === undefined) continue;
      const ns = Number(text);
      if (!Number.isInteger(ns) || ns < 1 || ns > 1e9) throw new Error(`--${flag}: an integer from 1 to 1e9 (ns), got '${text}'`);
      clock.push(`--${flag}`, String(ns));
    }
    return { quick: values.quick, clock, traceOut, keepTrace, real: !values['no-real'], seconds, concurrency, layout };
  } catch (e) {
    console.error(`tier: ${(e as Error).message}\n${USAGE}`);
    process.exit(2);
  }
}

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SIMULATOR = join(root, 'build', 'pd3_bench_tier');

// Runs the simulator, echoing its lines (except its JSON, and its line naming the trace file:
// this script says at the end whether the trace is kept); resolves with its last line's JSON.
async function simulate(opts: Options): Promise<JsonObject> {
  if (!existsSync(SIMULATOR)) throw new Error(`${SIMULATOR} is missing (run npm run build)`);
  const args = [...(opts.quick ? ['--quick'] : []), ...opts.clock, '--trace-out', opts.traceOut];
  const cmd = onSide(opts.layout, 'other', SIMULATOR, args);
  return runEchoing(cmd.file, cmd.args, (line) => line.startsWith('registration trace:'));
}

interface RealRow {
  policy: string;
  kops: number;
  p99Us: number;
  hit: number;
  evictions: number;
}

const PAGE = 64 << 10;
const READ = 4096;
const TOKEN = 'bench-tier';

// The tier's counters, from the server's Prometheus endpoint.
async function tierCounters(metrics: string): Promise<{ hits: number; misses: number; evictions: number }> {
  const text = await (await fetch(`http://${metrics}/metrics`)).text();
  const value = (name: string): number => {
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    if (line === undefined) throw new Error(`the memory server's metrics have no ${name}`);
    return Number(line.slice(name.length + 1));
  };
  return { hits: value('pd3_memserver_tier_hits_total'), misses: value('pd3_memserver_tier_misses_total'), evictions: value('pd3_memserver_tier_evictions_total') };
}

// The budget in 64 KiB frames (16 MiB; 8 MiB with --quick, so the fill stays short) and the data
// set, 4x the budget.
const framesOf = (opts: Options): number => (opts.quick ? 128 : 256);

async function realTier(policy: string, opts: Options): Promise<RealRow> {
  const frames = framesOf(opts);
  const pages = 4 * frames;
  const dataDir = mkdtempSync(join(tmpdir(), 'pd3-bench-tier-'));
  const ms = await startMemserver({ token: TOKEN, capacity: '1G', dataDir, metrics: true,
    extra: ['--dram-budget', String(frames * PAGE), '--page-size', '64K', '--evict', policy] });
  const host = Pd3Host.create({ name: `bench-tier-${process.pid}-${policy}`, directOnly: true, directServers: [`127.0.0.1:${ms.port}`], directToken: TOKEN });
  try {
    const { region } = await host.allocate(pages * PAGE);
    const chunk = Buffer.alloc(1 << 20);
    for (let off = 0; off < pages * PAGE; off += chunk.length) {
      chunk.fill(off >>> 20);
      await host.write(region, off, chunk);
    }
    // YCSB-C zipfian over the pages: record i is page i; each read takes 4 KiB from its page.
    const ycsb = new Workload({ workload: 'C', distribution: 'zipfian', recordCount: pages, seed: 1 });
    const before = await tierCounters(ms.metrics);
    const latencies: number[] = [];
    const end = performance.now() + opts.seconds * 1000;
    const worker = async (): Promise<void> => {
      while (performance.now() < end) {
        const page = ycsb.next().key;
        const within = ((page * 7919) % (PAGE / READ)) * READ;
        const t0 = performance.now();
        await host.read(region, page * PAGE + within, READ);
        latencies.push(performance.now() - t0);
      }
    };
    const t0 = performance.now();
    await Promise.all(Array.from({ length: opts.concurrency }, worker));
    const seconds = (performance.now() - t0) / 1000;
    const after = await tierCounters(ms.metrics);
    latencies.sort((a, b) => a - b);
    const p99 = (latencies[Math.min(latencies.length - 1, Math.floor(0.99 * latencies.length))] ?? 0) * 1000;
    const hits = after.hits - before.hits;
    const misses = after.misses - before.misses;
    return { policy, kops: latencies.length / seconds / 1000, p99Us: p99, hit: hits / Math.max(1, hits + misses), evictions: after.evictions - before.evictions };
  } finally {
    host.close();
    await ms.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const opts = options();
// The client of part 2 is this process: the data system's side, pinned to the host CPUs in split.
pinThisProcess(opts.layout, 'host');
const started = performance.now();
const result: Record<string, JsonValue> = { bench: 'tier', quick: opts.quick, layout: opts.layout.name };
Object.assign(result, await simulate(opts));
console.log(opts.keepTrace ? `registration trace (lru, zipfian fills): ${opts.traceOut}` : 'registration trace: not kept (--trace-out FILE keeps it)');
result.trace_out = opts.keepTrace ? opts.traceOut : null;
if (opts.real) {
  const rows: RealRow[] = [];
  for (const policy of POLICIES) rows.push(await realTier(policy, opts));
  const frames = framesOf(opts);
  console.log(`real tier: pd3-memserver --dram-budget ${(frames * PAGE) >> 20}M --page-size 64K, region ${(4 * frames * PAGE) >> 20} MiB,` +
    ` YCSB-C zipfian ${READ}-byte reads of its pages, ${opts.concurrency} in flight, ${opts.seconds} s per policy`);
  console.log('| policy | kops/s | p99 µs | tier hit ratio | evictions |');
  console.log('|---|---|---|---|---|');
  for (const r of rows) {
    console.log(`| ${r.policy} | ${r.kops.toFixed(1)} | ${r.p99Us.toFixed(0)} | ${r.hit.toFixed(4)} | ${r.evictions} |`);
    result[`real_${r.policy}_kops`] = Number(r.kops.toFixed(2));
    result[`real_${r.policy}_p99_us`] = Number(r.p99Us.toFixed(1));
    result[`real_${r.policy}_hit`] = Number(r.hit.toFixed(4));
  }
}
result.seconds = Number(((performance.now() - started) / 1000).toFixed(1));
console.log(JSON.stringify(result));
