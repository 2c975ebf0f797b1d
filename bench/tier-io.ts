// tier-io.ts — `npm run bench -- tier-io [--quick]`: the SSD tier's two I/O backends side by side
// with the untiered baseline. One pd3-memserver (on the "other" core in split layout, core-layout.ts)
// holds a region 16× its DRAM budget; this process, pinned to the host core as the tier bench's
// client is, drives random 4 KiB reads (or, with --op page-write, writes of whole 64 KiB pages) at a
// fixed concurrency, so most accesses find their page out of DRAM. Rows: mapped (no --dram-budget:
// the kernel's page cache tiers), --tier-io threads, --tier-io uring. The backing files sit on this machine's disk and, after the
// fill, mostly in its page cache: the figures compare the backends' overheads, not an SSD.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Pd3Host } from '../host/index.js';
import { applyLayoutOptions, checkLayoutOptions, LAYOUT_OPTIONS, LAYOUT_USAGE, pinThisProcess, type CoreLayout } from '../examples/harness/core-layout.js';
import { startMemserver } from '../examples/harness/processes.js';
import { metricsText, sample } from '../examples/harness/scrape.js';

const USAGE = `usage: npm run bench -- tier-io [--quick] [--concurrency N] [--op read|page-write]
  --quick          3 s per row (default 10 s)
  --concurrency N  requests in flight (default 32)
  --op OP          read: random 4 KiB reads (default); page-write: random writes of whole 64 KiB
                   pages, which the tier takes without reading
${LAYOUT_USAGE}`;

type Op = 'read' | 'page-write';

function options(): { quick: boolean; concurrency: number; op: Op; layout: CoreLayout } {
  try {
    const { values } = parseArgs({
      args: process.argv.slice(2),
      strict: true,
      options: {
        quick: { type: 'boolean', default: false },
        concurrency: { type: 'string', default: '32' },
        op: { type: 'string', default: 'read' },
        help: { type: 'boolean', default: false },
        ...LAYOUT_OPTIONS,
      },
    });
    if (values.help) {
      console.log(USAGE);
      process.exit(0);
    }
    const concurrency = Number(values.concurrency);
    if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 1024) throw new Error(`--concurrency: 1..1024, got '${values.concurrency}'`);
    if (values.op !== 'read' && values.op !== 'page-write') throw new Error(`--op: read or page-write, got '${values.op}'`);
    checkLayoutOptions(values);
    return { quick: values.quick, concurrency, op: values.op, layout: applyLayoutOptions(values) };
  } catch (e) {
    console.error(`tier-io: ${(e as Error).message}\n${USAGE}`);
    process.exit(2);
  }
}

const opts = options();
pinThisProcess(opts.layout, 'host');
const REGION = 64 << 20;
const BUDGET = '4M';
const PAGE = 64 << 10; // the tier's page size (pd3-memserver's default)
const SIZE = opts.op === 'read' ? 4096 : PAGE;
const durationMs = opts.quick ? 3000 : 10_000;
const token = 'bench-tier-io';

interface Row {
  mode: string;
  kops: number;
  p50Us: number;
  p99Us: number;
  misses: number;
  hits: number;
  overwrites: number;
}

async function run(mode: 'mapped' | 'threads' | 'uring'): Promise<Row> {
  const dataDir = mkdtempSync(join(tmpdir(), 'pd3-bench-tier-'));
  const extra = mode === 'mapped' ? [] : ['--dram-budget', BUDGET, '--tier-io', mode];
  const ms = await startMemserver({ token, capacity: '1G', dataDir, metrics: true, extra });
  const host = Pd3Host.create({ name: `bench-tier-${process.pid}-${mode}`, directOnly: true, directServers: [`127.0.0.1:${ms.port}`], directToken: token });
  try {
    const { region } = await host.allocate(REGION);
    const chunk = Buffer.alloc(1 << 20);
    for (let off = 0; off < REGION; off += chunk.length) {
      chunk.fill(off >>> 20);
      await host.write(region, off, chunk);
    }
    const fill = await tierCounts(ms, mode); // the fill's accesses are not the run's
    const latencies: number[] = [];
    let seed = 12345;
    const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
    const end = performance.now() + durationMs;
    const page = Buffer.alloc(PAGE, 0x5a);
    const worker = async () => {
      while (performance.now() < end) {
        const off = (next() % (REGION / SIZE)) * SIZE;
        const t0 = performance.now();
        if (opts.op === 'read') await host.read(region, off, SIZE);
        else await host.write(region, off, page);
        latencies.push(performance.now() - t0);
      }
    };
    const t0 = performance.now();
    await Promise.all(Array.from({ length: opts.concurrency }, worker));
    const seconds = (performance.now() - t0) / 1000;
    latencies.sort((a, b) => a - b);
    const at = (q: number) => (latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0) * 1000;
    const stats = await tierCounts(ms, mode);
    return { mode, kops: latencies.length / seconds / 1000, p50Us: at(0.5), p99Us: at(0.99), misses: stats.misses - fill.misses,
      hits: stats.hits - fill.hits, overwrites: stats.overwrites - fill.overwrites };
  } finally {
    host.close();
    await ms.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

// The tier's access counters, from the server's Prometheus endpoint (0 for the mapped row, which has
// no tier; a tiered server without one of them is an error).
async function tierCounts(ms: { metrics: string }, mode: string): Promise<{ misses: number; hits: number; overwrites: number }> {
  if (mode === 'mapped') return { misses: 0, hits: 0, overwrites: 0 };
  const text = await metricsText(ms.metrics);
  return {
    misses: sample(text, 'pd3_memserver_tier_misses_total'),
    hits: sample(text, 'pd3_memserver_tier_hits_total'),
    overwrites: sample(text, 'pd3_memserver_tier_overwrites_total'),
  };
}

const rows: Row[] = [];
for (const mode of ['mapped', 'threads', 'uring'] as const) rows.push(await run(mode));
const what = opts.op === 'read' ? `random ${SIZE}-byte reads` : `random writes of whole ${SIZE >> 10} KiB pages`;
console.log(`tier-io: ${REGION >> 20} MiB region, DRAM budget ${BUDGET} (64 KiB pages), ${what}, ${opts.concurrency} in flight, ${durationMs / 1000} s per row`);
console.log('| mode | kops/s | p50 µs | p99 µs | tier misses | tier hits | tier overwrites |');
console.log('|---|---|---|---|---|---|---|');
for (const r of rows) console.log(`| ${r.mode} | ${r.kops.toFixed(1)} | ${r.p50Us.toFixed(0)} | ${r.p99Us.toFixed(0)} | ${r.misses} | ${r.hits} | ${r.overwrites} |`);
console.log(JSON.stringify({ bench: 'tier-io', quick: opts.quick, op: opts.op, layout: opts.layout.name, concurrency: opts.concurrency, rows }));
