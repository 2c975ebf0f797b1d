// `npm run bench -- memserver`'s parts: the transfer host program in direct mode against a real
// memory server with the region size the benchmark sets (every request answered without error,
// the regions given back at the end, a region smaller than a request refused), and the
// benchmark's own refusal of a bad command line.
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { Logger, MemServer, memServerOptions } from '../dist/memserver/index.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const HOST_PROGRAM = `${root}build/pd3_bench_transfer`;

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  while (cleanup.length > 0) await cleanup.pop()!();
});

function runHostProgram(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const p = spawn(HOST_PROGRAM, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    p.on('exit', (code) => resolve({ code, out, err }));
  });
}

describe('bench memserver: the host program in direct mode', () => {
  it('answers every request in a region of the size asked for, and gives the regions back', async () => {
    const server = await MemServer.start(
      memServerOptions({ listen: '127.0.0.1:0', token: 't', capacity: '64M', metrics: 'off', warmAhead: 4 }, {}),
      new Logger('memserver', 'warn', () => {}),
    );
    cleanup.push(() => server.close());
    const r = await runHostProgram(['--mode', 'direct', '--threads', '2', '--window', '256', '--seconds', '0.3',
      '--servers', `127.0.0.1:${server.port}`, '--token', 't', '--region-bytes', String(64 << 10)]);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.out.trim().split('\n').pop()!) as { ops: number; errors: number };
    expect(report.errors).toBe(0);
    expect(report.ops).toBeGreaterThan(1000);
    const stats = server.stats();
    // Both threads' regions were allocated, and freed before the program closed its handles.
    expect(stats.regions).toBe(0);
    expect(stats.reads! + stats.writes!).toBeGreaterThanOrEqual(report.ops);
    expect(stats.warm_hints).toBeGreaterThan(0);
  }, 30_000);

  it('refuses a region smaller than one request', async () => {
    const r = await runHostProgram(['--mode', 'direct', '--region-bytes', '63', '--size', '64']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--region-bytes \(63\) must be at least --size \(64\)/);
  });

  it('refuses more requests in flight than the host library has ids, before it starts', async () => {
    // 2 x (8128 + 64) = 16384 ids fits; one more request per thread does not.
    const over = await runHostProgram(['--mode', 'direct', '--threads', '2', '--window', '8129']);
    expect(over.code).toBe(2);
    expect(over.err).toMatch(/--threads \(2\) x \(--window \(8129\) \+ 64 ids a handle may hold unused\) must be at most 16384/);
    const zero = await runHostProgram(['--mode', 'direct', '--window', '0']);
    expect(zero.code).toBe(2);
  });
});

describe('bench memserver: its command line', () => {
  const bench = (args: string[]) =>
    spawnSync(process.execPath, [`${root}scripts/bench.mjs`, 'memserver', ...args], { encoding: 'utf8' });

  it('prints its usage for --help and refuses a bad --warm-ahead with exit 2', () => {
    const help = bench(['--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^usage: npm run bench -- memserver/);
    for (const bad of ['0', '257', 'x']) {
      const r = bench(['--warm-ahead', bad]);
      expect(r.status, bad).toBe(2);
      expect(r.stderr).toContain(`memserver: --warm-ahead must be an integer from 1 to 256, got '${bad}'`);
    }
  });
});
