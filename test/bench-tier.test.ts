// bench-tier.test.ts — the tier policy simulator (build/pd3_bench_tier, bench/native/tier.cpp) as a
// process: refused command lines (exit 2 naming the flag), and a small run whose JSON holds every
// policy's hit ratio at or below Belady's, prefetchers that help scans, and whose registration
// trace has the v1 format; and `bench tier` (bench/tier.ts), which keeps that trace only when asked.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const SIMULATOR = join(root, 'build', 'pd3_bench_tier');
const dir = mkdtempSync(join(tmpdir(), 'pd3-bench-tier-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(SIMULATOR, args, { encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('pd3_bench_tier', () => {
  it.each([
    [['--frames', '0'], "--frames needs a positive integer, got '0'"],
    [['--accesses', 'many'], "--accesses needs a positive integer, got 'many'"],
    [['--page-size', '-4'], "--page-size needs a positive integer, got '-4'"],
    [['--seed'], '--seed needs a value'],
    [['--trace-out'], '--trace-out needs a file'],
    [['--fast'], "unknown option '--fast'"],
    [['--miss-ns', '0'], "--miss-ns needs a positive integer, got '0'"],
    [['--hit-ns'], '--hit-ns needs a value'],
    [['--epoch-share', '0'], "--epoch-share needs a share in (0, 1], got '0'"],
    [['--epoch-share', '1.5'], "--epoch-share needs a share in (0, 1], got '1.5'"],
    [['--epoch-share', 'half'], "--epoch-share needs a share in (0, 1], got 'half'"],
    [['--trace-out', join(dir, 'missing', 'trace.txt'), '--frames', '8', '--accesses', '100'], 'cannot write --trace-out'],
  ])('refuses %j with exit 2', (args, message) => {
    const r = run(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(message);
  });

  it('replays every policy below Belady and writes the registration trace', () => {
    const trace = join(dir, 'trace.txt');
    const pageSize = 4096;
    const frames = 64;
    const r = run(['--frames', String(frames), '--accesses', '20000', '--page-size', String(pageSize), '--repeat', '1', '--trace-out', trace]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    const result = JSON.parse(lines[lines.length - 1]!) as Record<string, number | boolean>;
    for (const w of ['', 'uniform_', 'scan_', 'zipfian_rw_']) {
      const belady = result[`${w}belady_hit`] as number;
      expect(belady).toBeGreaterThan(0);
      for (const p of ['lru', 'fifo', 'random', 'cflru', 'epoch']) {
        const hit = result[`${w}${p}_hit`] as number;
        expect(hit).toBeGreaterThan(0);
        expect(hit).toBeLessThanOrEqual(belady);
        expect(result[`${w}${p}_cpu_ns_per_access`]).toBeGreaterThan(0);
      }
    }
    // Clean-first LRU writes back fewer dirty pages than LRU when half the accesses write.
    expect(result.zipfian_rw_cflru_writebacks as number).toBeLessThan(result.zipfian_rw_lru_writebacks as number);
    expect(result.check_lru_le_belady).toBe(true);
    // Read-ahead: every prefetcher beats none on scans; on zipfian point reads Leap stays (nearly)
    // idle, and a prefetcher never counts more unused evictions than pages it read.
    for (const p of ['next_n', 'best_offset', 'leap']) {
      expect(result[`scan_lru_${p}_hit`] as number).toBeGreaterThan((result.scan_lru_none_hit as number) + 0.3);
      for (const w of ['', 'scan_']) expect(result[`${w}lru_${p}_useless`] as number).toBeLessThanOrEqual(result[`${w}lru_${p}_prefetches`] as number);
    }
    expect(result.lru_none_prefetches).toBe(0);
    expect(result.lru_leap_prefetches as number).toBeLessThan((result.lru_next_n_prefetches as number) / 10);
    expect(lines).toContain(`registration trace: ${trace}`);
    const text = readFileSync(trace, 'utf8').trimEnd().split('\n');
    expect(text[0]).toBe('# pd3 registration trace v1');
    const fills = text.slice(1).map((l) => l.split(' ').map(Number));
    // Every frame is filled once before the pool is full, then once per miss.
    expect(fills.length).toBeGreaterThan(frames);
    const seen = new Set<number>();
    for (const [address, length] of fills) {
      expect(length).toBe(pageSize);
      expect(address! % pageSize).toBe(0);
      expect(address).toBeLessThan(frames * pageSize);
      seen.add(address!);
    }
    expect(seen.size).toBe(frames);
  });

  it('replays on a virtual clock: hits and misses advance it, epoch is deterministic under it', () => {
    const small = ['--frames', '256', '--accesses', '40000', '--repeat', '1', '--workload', 'zipfian', '--epoch-period-us', '100'];
    const json = (args: string[]): Record<string, number | string | boolean> => {
      const r = run([...small, ...args]);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const lines = r.stdout.trim().split('\n');
      return JSON.parse(lines[lines.length - 1]!) as Record<string, number | string | boolean>;
    };
    const a = json(['--hit-ns', '1000', '--miss-ns', '50000']);
    expect(a.cpu_clock).toBe('virtual');
    expect(a.miss_ns).toBe(50000);
    expect(a.hit_ns).toBe(1000);
    // The clock is the sum of the accesses' costs: between all-hits and all-misses, and the
    // periods it passed are whole periods of it.
    const virtualNs = a.virtual_ns as number;
    expect(virtualNs).toBeGreaterThan(40000 * 1000);
    expect(virtualNs).toBeLessThan(40000 * 50000);
    expect(a.epoch_periods).toBe(Math.floor(virtualNs / 100_000));
    // Dearer misses: a longer clock, more epochs; the paced epoch replay has no wall-clock input,
    // so the same command line gives the same hit ratio.
    const b = json(['--hit-ns', '1000', '--miss-ns', '100000']);
    expect(b.virtual_ns as number).toBeGreaterThan(a.virtual_ns as number);
    expect(b.epoch_periods as number).toBeGreaterThan(a.epoch_periods as number);
    expect(json(['--hit-ns', '1000', '--miss-ns', '50000']).epoch_hit).toBe(a.epoch_hit);
    for (const p of ['lru', 'epoch']) {
      expect(a[`${p}_unpaced_cpu_ns_per_access`] as number).toBeGreaterThan(0);
      expect(a[`${p}_unpaced_hit`] as number).toBeLessThanOrEqual(a.belady_hit as number);
    }
    // lru ignores the clock.
    expect(a.lru_unpaced_hit).toBe(a.lru_hit);
  });
});

// `npm run bench -- tier` (bench/tier.ts) itself: the registration trace is kept only when asked.
describe('bench tier: the registration trace', () => {
  const TIER = fileURLToPath(new URL('../dist/bench/tier.js', import.meta.url));
  // Runs the bench without its real-tier part, with TMPDIR private to the run; returns the JSON
  // line, the lines before it that name the trace, and what the run left in TMPDIR.
  function bench(extra: string[]): { result: Record<string, unknown>; traceLines: string[]; leftovers: string[] } {
    const tmp = mkdtempSync(join(dir, 'tmp-'));
    const r = spawnSync(process.execPath, [TIER, '--quick', '--no-real', ...extra],
      { encoding: 'utf8', timeout: 120_000, env: { ...process.env, TMPDIR: tmp } });
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    return { result: JSON.parse(lines[lines.length - 1]!) as Record<string, unknown>,
      traceLines: lines.filter((l) => l.includes('registration trace')), leftovers: readdirSync(tmp) };
  }

  it('is removed at exit without --trace-out', () => {
    const { result, traceLines, leftovers } = bench([]);
    expect(result.trace_out).toBeNull();
    // One line, and no path to a file that is gone by the time it is read.
    expect(traceLines).toEqual(['registration trace: not kept (--trace-out FILE keeps it)']);
    expect(result.lru_hit as number).toBeGreaterThan(0);
    expect(leftovers).toEqual([]);
  });

  it('is kept where --trace-out says', () => {
    const trace = join(dir, 'kept-trace.txt');
    const { result, traceLines, leftovers } = bench(['--trace-out', trace]);
    expect(result.trace_out).toBe(trace);
    expect(traceLines).toEqual([`registration trace (lru, zipfian fills): ${trace}`]);
    expect(readFileSync(trace, 'utf8').split('\n')[0]).toBe('# pd3 registration trace v1');
    expect(leftovers).toEqual([]);
  });
});
