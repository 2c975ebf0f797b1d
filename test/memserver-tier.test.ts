// pd3-memserver --dram-budget (the SSD tier, docs/tier.md): several clients reading and writing at
// once through a DRAM budget of a few pages, checked against a model of the bytes; a kill -9 of the
// server process with evicted dirty pages loses no acknowledged write (under --sync batch and --sync
// none alike); the tier's metrics; and every
// tier flag's bad input is refused with a precise message (exit 2 from the CLI).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Logger } from '../dist/cli/logger.js';
import { freePort } from '../dist/examples/harness/processes.js';
import { Pd3Host } from '../dist/host/index.js';
import { MemServer, memServerOptions, parseMemServerCommand } from '../dist/memserver/index.js';
import { memServerFamilies } from '../dist/memserver/metrics.js';
import { uniqueName } from './helpers.js';
import { waitUntil } from './integration-helpers.js';

const MEMSERVER_CLI = new URL('../dist/memserver/cli.js', import.meta.url).pathname;
const PAGE = 4096;

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  while (cleanup.length > 0) await cleanup.pop()!();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'pd3-tier-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function client(port: number): Pd3Host {
  const host = Pd3Host.create({ name: uniqueName('tier'), directOnly: true, directServers: [`127.0.0.1:${port}`], directToken: 't' });
  cleanup.push(() => host.close());
  return host;
}

// A seeded generator, so a failure can be replayed.
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('pd3-memserver --dram-budget', () => {
  it('serves several clients at once through a budget of four pages, byte-exact', async () => {
    const dir = tempDir();
    const server = await MemServer.start(
      memServerOptions({ listen: '127.0.0.1:0', token: 't', metrics: 'off', capacity: '64M', dataDir: join(dir, 'data'),
        dramBudget: 4 * PAGE, pageSize: '4K' }, {}),
      new Logger('memserver', 'warn', () => {}),
    );
    cleanup.push(() => server.close());
    const regionBytes = 32 * PAGE;
    const clients = [0, 1, 2].map(() => client(server.port));
    // Each client owns a region (its model is exact), and every request of all three competes for
    // the same four frames.
    const work = clients.map(async (host, c) => {
      const { region } = await host.allocate(regionBytes);
      const model = Buffer.alloc(regionBytes);
      const next = rng(c + 1);
      for (let i = 0; i < 150; i++) {
        const len = 1 + Math.floor(next() * (2 * PAGE - 1));
        const off = Math.floor(next() * (regionBytes - len + 1));
        if (next() < 0.5) {
          const data = Buffer.alloc(len);
          for (let j = 0; j < len; j++) data[j] = Math.floor(next() * 256);
          await host.write(region, off, data);
          data.copy(model, off);
        } else {
          const got = await host.read(region, off, len);
          expect(got.equals(model.subarray(off, off + len))).toBe(true);
        }
      }
      for (let off = 0; off < regionBytes; off += PAGE) {
        expect((await host.read(region, off, PAGE)).equals(model.subarray(off, off + PAGE))).toBe(true);
      }
    });
    await Promise.all(work);
    await waitUntil(() => server.stats().tier_misses > 0, 2000, 'tier counters published');
    const s = server.stats();
    expect(s.tier_frames).toBe(4);
    expect(s.tier_resident_pages).toBeLessThanOrEqual(4);
    expect(s.tier_evictions).toBeGreaterThan(0);
    expect(s.tier_hits).toBeGreaterThan(0);
    expect(s.tier_io_errors).toBe(0);
    expect(s.tier_dirty_pages).toBe(0); // each frame's pages are written through
    expect(s.tier_writeback_bytes).toBeGreaterThan(0);
    // The frames register through MRRC (--mr-cache defaults to the budget: all four fit).
    expect(s.tier_mr_misses).toBeGreaterThan(0);
    expect(s.tier_mr_hits).toBeGreaterThan(0); // evicted frames were refilled
    expect(s.tier_mr_failures).toBe(0);
    expect(s.tier_mr_pinned_bytes).toBeGreaterThan(0);
    expect(s.tier_mr_pinned_bytes).toBeLessThanOrEqual(4 * PAGE);
    // Every tier stat is a described metric (none falls back to the "not yet described" gauge).
    const families = memServerFamilies(s, [0]);
    for (const name of ['hits_total', 'misses_total', 'evictions_total', 'writebacks_total', 'prefetches_total',
      'useless_prefetches_total', 'io_errors_total', 'resident_pages', 'dirty_pages', 'frames', 'writeback_bytes_total',
      'fdatasyncs_total', 'overwrites_total', 'mr_hits_total', 'mr_misses_total', 'mr_failures_total', 'mr_pinned_bytes']) {
      const f = families.find((x) => x.name === `pd3_memserver_tier_${name}`);
      expect(f, name).toBeDefined();
      expect(f!.help).not.toMatch(/not yet described/);
    }
    expect(families.some((f) => f.name.startsWith('pd3_memserver_tier_') && /not yet described/.test(f.help))).toBe(false);
  }, 60_000);

  it('counts and logs once the frame registrations a small --mr-cache refuses', async () => {
    const dir = tempDir();
    const lines: string[] = [];
    const server = await MemServer.start(
      memServerOptions({ listen: '127.0.0.1:0', token: 't', metrics: 'off', capacity: '16M', dataDir: join(dir, 'data'),
        dramBudget: 4 * PAGE, pageSize: '4K', mrCache: '4K', sync: 'none' }, {}),
      new Logger('memserver', 'warn', (line) => lines.push(line)),
    );
    cleanup.push(() => server.close());
    const host = client(server.port);
    const { region } = await host.allocate(8 * PAGE);
    for (let page = 0; page < 8; page++) await host.read(region, page * PAGE, 8);
    // One frame fits the cache; the other three fills of the first four pages are refused, and
    // refills of frames cycle through both.
    await waitUntil(() => server.stats().tier_mr_failures >= 3, 2000, 'registration counters published');
    const s = server.stats();
    expect(s.tier_mr_pinned_bytes).toBe(PAGE);
    expect(s.tier_mr_misses + s.tier_mr_hits + s.tier_mr_failures).toBe(8); // one outcome per fill
    await waitUntil(() => lines.some((l) => l.includes('tier.mr_refused')), 2000, 'refusal logged');
    expect(lines.filter((l) => l.includes('tier.mr_refused'))).toHaveLength(1);
  }, 30_000);

  it.each(['batch', 'none'])('keeps every acknowledged write across a kill -9 with evicted dirty pages (--sync %s)', async (sync) => {
    const dir = tempDir();
    const data = join(dir, 'data');
    const start = async () => {
      const port = await freePort();
      const child = spawn(process.execPath, [MEMSERVER_CLI, '--listen', `127.0.0.1:${port}`, '--capacity', '16M',
        '--metrics', 'off', '--data-dir', data, '--dram-budget', '8K', '--page-size', '4K', '--sync', sync], {
        stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, PD3_TOKEN: 't' },
      });
      let err = '';
      child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
      await waitUntil(() => err.includes('"ready"'), 10_000, 'memory server ready');
      return { child, port };
    };
    const first = await start();
    cleanup.push(() => first.child.kill('SIGKILL'));
    const host = Pd3Host.create({ name: uniqueName('tier-kill'), directOnly: true, directServers: [`127.0.0.1:${first.port}`], directToken: 't' });
    const { region } = await host.allocate(16 * PAGE);
    const model = Buffer.alloc(16 * PAGE);
    for (let i = 0; i < 64; i++) {
      const page = (i * 5) % 16;
      const bytes = Buffer.alloc(PAGE / 2, (i % 250) + 1);
      await host.write(region, page * PAGE + (i % 2) * (PAGE / 2), bytes); // acknowledged
      bytes.copy(model, page * PAGE + (i % 2) * (PAGE / 2));
    }
    first.child.kill('SIGKILL');
    host.close();
    await new Promise((r) => first.child.once('exit', r));
    const second = await start();
    cleanup.push(() => second.child.kill('SIGKILL'));
    const again = client(second.port);
    for (let page = 0; page < 16; page++) {
      expect((await again.read(region, page * PAGE, PAGE)).equals(model.subarray(page * PAGE, (page + 1) * PAGE))).toBe(true);
    }
  }, 60_000);

  it('refuses bad tier flags with precise messages', () => {
    const env = { PD3_TOKEN: 't' };
    const parse = (...flags: string[]) => () => parseMemServerCommand(['--data-dir', '/tmp/x', ...flags], env);
    expect(parse('--dram-budget', '1K')).toThrow(/--dram-budget 1024: below one page \(--page-size 65536\)/);
    expect(parse('--dram-budget', '1M', '--page-size', '12K')).toThrow(/--page-size 12288: must be a power of two/);
    expect(parse('--dram-budget', '1M', '--page-size', '2K')).toThrow(/page-size/);
    expect(parse('--dram-budget', '1M', '--page-size', '4M')).toThrow(/page-size/);
    expect(parse('--dram-budget', '1M', '--evict', 'mru')).toThrow(/evict.*lru, fifo, random, cflru, epoch|mru/);
    expect(parse('--dram-budget', '1M', '--tier-prefetch', 'ahead')).toThrow(/tier-prefetch|ahead/);
    expect(parse('--dram-budget', '1M', '--tier-io', 'aio')).toThrow(/tier-io|aio/);
    expect(parse('--evict', 'lru')).toThrow(/--evict needs --dram-budget/);
    expect(parse('--mr-cache', '1M')).toThrow(/--mr-cache needs --dram-budget/);
    expect(parse('--dram-budget', '1M', '--mr-cache', 'lots')).toThrow(/mr-cache/);
    expect(parse('--dram-budget', '1M', '--mr-cache', '-1')).toThrow(/mr-cache/);
    expect(parse('--dram-budget', '1M', '--mr-cache', '1K')).toThrow(/--mr-cache 1024: below one page \(--page-size 65536\)/);
    const noMr = parseMemServerCommand(['--data-dir', '/tmp/x', '--dram-budget', '1M', '--mr-cache', '0'], env);
    expect(noMr.kind === 'run' && noMr.options.tier?.mrCache).toBe(0);
    const mr = parseMemServerCommand(['--data-dir', '/tmp/x', '--dram-budget', '1M', '--mr-cache', '256K'], env);
    expect(mr.kind === 'run' && mr.options.tier?.mrCache).toBe(256 * 1024);
    expect(() => parseMemServerCommand(['--dram-budget', '1M'], env)).toThrow(/--dram-budget needs --data-dir/);
    expect(() => memServerOptions({ dataDir: '/tmp/x', dramBudget: '1M', evict: 'mru' as 'lru' }, env)).toThrow(/evict/);
    const ok = parseMemServerCommand(['--data-dir', '/tmp/x', '--dram-budget', '1M', '--evict', 'cflru', '--tier-io', 'threads'], env);
    expect(ok.kind === 'run' && ok.options.tier).toEqual({ dramBudget: 1 << 20, pageSize: 65536, evict: 'cflru', tierPrefetch: 'none', tierIo: 'threads' });
    const cli = spawnSync(process.execPath, [MEMSERVER_CLI, '--data-dir', '/tmp/x', '--dram-budget', '100'], { env: { ...process.env, ...env } });
    expect(cli.status).toBe(2);
    expect(cli.stderr.toString()).toMatch(/below one page/);
    const mrCli = spawnSync(process.execPath, [MEMSERVER_CLI, '--data-dir', '/tmp/x', '--dram-budget', '1M', '--mr-cache', 'many'], { env: { ...process.env, ...env } });
    expect(mrCli.status).toBe(2);
    expect(mrCli.stderr.toString()).toMatch(/mr-cache/);
  });
});
