// e2e.test.ts — the end-to-end benchmark's pieces with real processes, small: the hash map driven
// by pd3-loadgen (binary protocol, every value read checked against the hash map's own load) at the
// one client load of every mode, recorded in the result; the agent's DMA operations per client
// access (pd3-kv, with and without the latency backend); `e2e --find-load` over a small grid
// writing load-knee.json only into --out; and refused command lines (exit 2 naming the option,
// nothing run, nothing written).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { dmaPerAccess, type AgentDmaSample } from '../dist/examples/harness/agent-dma.js';
import { CLIENT_LOAD, runHashmap, runKv, type RunSpec } from '../dist/examples/harness/e2e-apps.js';

const E2E = fileURLToPath(new URL('../dist/bench/e2e.js', import.meta.url));

let out: string | null = null;
afterEach(() => {
  if (out) rmSync(out, { recursive: true, force: true });
  out = null;
});

const small: RunSpec = { records: 5000, cachePercent: 1, zoneBytes: 16 << 20, warmupMs: 300, durationMs: 700, mirror: 'tee', agentArgs: [] };

describe('e2e: the hash map under pd3-loadgen', () => {
  it('local: every request answered, at CLIENT_LOAD, no misses', async () => {
    const r = await runHashmap('local', small, () => undefined);
    expect(r.app).toBe('hashmap');
    expect(r.kops).toBeGreaterThan(0);
    expect(r.errors).toBe(0);
    expect({ connections: r.connections, pipeline: r.pipeline }).toEqual({ ...CLIENT_LOAD });
    expect(r.hitRate).toBeNull();
    expect(r.hostCpuUsPerOp).toBeGreaterThan(0);
  });

  it('pd3 (tee mirror): the Loading Zone serves some misses; the agent\'s CPU is counted', async () => {
    const r = await runHashmap('pd3', small, () => undefined);
    expect(r.kops).toBeGreaterThan(0);
    expect(r.errors).toBe(0);
    expect(r.hitRate).not.toBeNull();
    expect(r.hitRate!).toBeGreaterThan(0);
    expect(r.dpuCpuUsPerOp).toBeGreaterThan(0);
    expect(r.pipeline).toBe(CLIENT_LOAD.pipeline);
  }, 60_000);
});

describe('e2e: the agent\'s DMA operations per client access', () => {
  it('pd3-kv in pd3 mode: counted by the latency backend (0 µs), none on shared memory', async () => {
    const counted = await runKv('pd3', { ...small, agentArgs: ['--dma-latency-us', '0'] }, () => undefined);
    expect(counted.errors).toBe(0);
    const dma = counted.dmaPerAccess!;
    expect(dma).not.toBeNull();
    // Every captured GET that misses leads to a zone item (writes, fences) and the host's requests
    // are read from the ring: some of each kind, summing to the total.
    expect(dma.writes).toBeGreaterThan(0);
    expect(dma.fences).toBeGreaterThan(0);
    expect(dma.total).toBeCloseTo(dma.reads + dma.writes + dma.atomics + dma.fences, 9);
    const shared = await runKv('pd3', small, () => undefined);
    expect(shared.errors).toBe(0);
    expect(shared.dmaPerAccess).toBeNull();
    const direct = await runKv('async', small, () => undefined);
    expect(direct.dmaPerAccess).toBeUndefined(); // no agent
  }, 90_000);

  it('dmaPerAccess: per access by kind; null with no access or nothing counted', () => {
    const at = (n: number, accesses: number): AgentDmaSample => ({ reads: n, writes: 2 * n, atomics: 3 * n, fences: 4 * n, accesses });
    expect(dmaPerAccess(at(10, 100), at(30, 110))).toEqual({ reads: 2, writes: 4, atomics: 6, fences: 8, total: 20 });
    expect(dmaPerAccess(at(10, 100), at(30, 100))).toBeNull(); // no access in between
    expect(dmaPerAccess(at(0, 100), at(0, 200))).toBeNull(); // shared memory: nothing counted
  });
});

const e2e = (args: string[], timeout = 20_000) => spawnSync(process.execPath, [E2E, ...args], { encoding: 'utf8', timeout });

describe('e2e command line', () => {
  it('--help lists --find-load and --load-grid and exits 0', () => {
    const r = e2e(['--help']);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/--find-load/);
    expect(r.stdout).toMatch(/--load-grid C:P/);
  });

  it.each([
    [['--find-load', '--apps', 'hashmap'], /--find-load: .*--apps does not go with it/],
    [['--find-load', '--modes', 'sync'], /--modes does not go with it/],
    [['--find-load', '--quick'], /--quick does not go with it/],
    [['--find-load', '--replot', 'results.json'], /--replot does not go with it/],
    [['--load-grid', '1:1'], /--load-grid: only with --find-load/],
    [['--find-load', '--load-grid', '1,2'], /--load-grid: expected CONNECTIONS:PIPELINES/],
    [['--find-load', '--load-grid', '0:8'], /--load-grid: connections must be integers in 1\.\.1024, got '0'/],
    [['--find-load', '--load-grid', '4:9999'], /--load-grid: pipelines must be integers in 1\.\.4096/],
    [['--find-load=yes'], /find-load/],
    [['--modes', 'sync,fast'], /--modes: unknown mode 'fast'/],
    [['--zone-wait-us', '1.5'], /--zone-wait-us: a whole number of µs, got '1\.5'/],
    [['--zone-wait-us', '-3'], /zone-wait-us/],
  ])('%j exits 2 with the reason, runs and writes nothing', (args, why) => {
    out = mkdtempSync(join(tmpdir(), 'pd3-e2e-cli-'));
    const r = e2e([...args, '--out', join(out, 'results')]);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toMatch(why);
    expect(r.stderr).toMatch(/usage: npm run bench -- e2e/);
    expect(r.stdout).toBe('');
    expect(readdirSync(out)).toEqual([]);
  });

  it('--find-load over a small grid: a table, load-knee.json in --out only, the knee within 10% of the peak', () => {
    out = mkdtempSync(join(tmpdir(), 'pd3-e2e-knee-'));
    const r = e2e(['--find-load', '--load-grid', '1,2:1,4', '--out', out], 60_000);
    expect(r.status, r.stderr).toBe(0);
    expect(readdirSync(out)).toEqual(['load-knee.json']);
    const file = JSON.parse(readFileSync(join(out, 'load-knee.json'), 'utf8')) as {
      app: string; mode: string; tolerance: number; clientLoadInUse: { connections: number; pipeline: number };
      rows: Array<{ connections: number; pipeline: number; outstanding: number; kops: number; passKops: number[]; errors: number }>;
      peak: { kops: number }; knee: { connections: number; pipeline: number; kops: number };
    };
    expect([file.app, file.mode, file.tolerance]).toEqual(['pd3-kv', 'local', 0.1]);
    expect(file.clientLoadInUse).toEqual({ ...CLIENT_LOAD });
    // Grid order: outstanding 1, 2, 4, 8 (2×1 before 1×4 would be wrong: 2 < 4).
    expect(file.rows.map((x) => `${x.connections}x${x.pipeline}`)).toEqual(['1x1', '2x1', '1x4', '2x4']);
    for (const x of file.rows) {
      expect(x.kops).toBeGreaterThan(0);
      expect(x.errors).toBe(0);
      expect(x.outstanding).toBe(x.connections * x.pipeline);
      // Each load is run once per pass (2) and keeps its best.
      expect(x.passKops).toHaveLength(2);
      expect(x.kops).toBe(Math.max(...x.passKops));
    }
    expect(file.peak.kops).toBe(Math.max(...file.rows.map((x) => x.kops)));
    const kneeAt = file.rows.findIndex((x) => x.connections === file.knee.connections && x.pipeline === file.knee.pipeline);
    expect(file.knee.kops).toBeGreaterThanOrEqual(0.9 * file.peak.kops);
    for (const x of file.rows.slice(0, kneeAt)) expect(x.kops).toBeLessThan(0.9 * file.peak.kops);
    // The table printed, and the last line one JSON object saying the same.
    const lines = r.stdout.trim().split('\n');
    expect(lines.filter((l) => /^\| \d+ \| \d+ \| \d+ \|/.test(l))).toHaveLength(4);
    const last = JSON.parse(lines[lines.length - 1]!) as Record<string, unknown>;
    expect([last.knee_connections, last.knee_pipeline, last.tolerance]).toEqual([file.knee.connections, file.knee.pipeline, 0.1]);
    expect(existsSync(join(out, 'results.json'))).toBe(false);
  }, 90_000);
});
