// pd3-kv-modes.test.ts — pd3-kv in every mode against real pd3-memserver (and pd3-agent) processes:
// random GET/SET/DEL/INCR/APPEND/MGET/MSET/... pipelines and MULTI/EXEC transactions through
// ioredis, checked reply by reply against a JS model, with a memory budget of a few 4 KiB pages so
// most keys live in remote memory. A read after a SET or DEL must always see the new state. The
// remote modes run once more against a memory server with the SSD tier (--dram-budget of four 4 KiB
// pages, a quarter or less of the data pd3-kv writes to it: docs/tier.md).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Logger } from '../dist/cli/logger.js';
import { startKv, type KvMode, type KvServer } from '../dist/examples/pd3-kv/index.js';
import { uniqueName } from './helpers.js';
import { Rig, waitUntil } from './integration-helpers.js';
import { Rand } from './workers/model-run.mjs';

const token = randomBytes(16).toString('hex');
const rig = new Rig();
let memserverPort = 0;
let tieredPort = 0;
const tieredDir = mkdtempSync(join(tmpdir(), 'pd3-kv-tier-'));
const quiet = new Logger('pd3-kv', 'error');

beforeAll(async () => {
  memserverPort = (await rig.memserver({ token, capacity: '256M' })).port;
  tieredPort = (await rig.memserver({ token, capacity: '256M', dataDir: tieredDir,
    // --sync none: the runs' own checks count flushes within a time, which a per-frame fdatasync
    // would slow below them on a real disk; pages then reach the files at eviction (write-back).
    extra: ['--dram-budget', '16K', '--page-size', '4K', '--sync', 'none'] })).port;
});
afterAll(async () => {
  await rig.teardown();
  rmSync(tieredDir, { recursive: true, force: true });
});

/** A pd3-kv in `mode` with a 16 KiB budget of 4 KiB pages, and a client; pd3 modes get an agent
 *  (pd3 with the RESP parser on the tee proxy; the client then talks through the proxy). */
async function start(mode: KvMode, server = (): number => memserverPort): Promise<{ kv: KvServer; client: Redis; stop: () => Promise<void> }> {
  const remote = server();
  const pd3 = mode === 'pd3' || mode === 'pd3-noprefetch';
  const segment = pd3 ? uniqueName(`kv-${mode}`) : undefined;
  const kv = await startKv(
    {
      listen: '127.0.0.1:0', mode, pageSize: '4K', memoryBudget: '16K', regionSize: '64K', segment,
      memservers: mode === 'local' || pd3 ? undefined : [`127.0.0.1:${remote}`],
      leapCache: '8K', logLevel: 'error',
    },
    { logger: quiet, env: { PD3_TOKEN: token } },
  );
  let port = kv.port;
  const stops: Array<() => Promise<unknown>> = [];
  if (pd3) {
    const extra = mode === 'pd3'
      ? ['--prefetch-parser', 'resp', '--mirror', 'tee', '--app', `127.0.0.1:${kv.port}`, '--tee-listen', '127.0.0.1:0']
      : [];
    const agent = await rig.agent(segment!, [remote], token, extra);
    stops.push(() => agent.stop(2000));
    if (mode === 'pd3') port = Number(agent.ready.teePort);
    await waitUntil(() => /agent_alive:1/.test(kv.info(['pd3kv'])), 5000, 'agent attached');
  }
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
  await client.connect();
  return {
    kv,
    client,
    stop: async () => {
      client.disconnect();
      for (const s of stops) await s();
      await kv.close();
    },
  };
}

/** One command and what the model says it answers (`expect`, or a range for TTL replies). */
type Step = { args: string[]; expect: unknown; within?: [number, number] };

/** The model: values, and the keys that have an expiry time (SET EX 1000: none expires in a run). */
interface Model {
  values: Map<string, string>;
  ttl: Set<string>;
}

/** Random commands over 120 string keys and 20 counters, applied to the model as they are drawn. */
function drawBatch(rand: Rand, m: Model, n: number): Step[] {
  const model = m.values;
  const str = (): string => `key:${rand.int(120)}`;
  const num = (): string => `num:${rand.int(20)}`;
  const value = (): string => {
    const len = rand.int(20) === 0 ? 1000 + rand.int(1500) : rand.int(120);
    return Array.from({ length: len }, () => String.fromCharCode(97 + rand.int(26))).join('');
  };
  const steps: Step[] = [];
  for (let i = 0; i < n; ++i) {
    const r = rand.int(100);
    if (r < 28) {
      const k = rand.int(4) === 0 ? num() : str();
      steps.push({ args: ['get', k], expect: model.get(k) ?? null });
    } else if (r < 46) {
      const k = str();
      const v = value();
      model.set(k, v);
      const ex = rand.int(8) === 0;
      if (ex) m.ttl.add(k);
      else m.ttl.delete(k);
      steps.push({ args: ex ? ['set', k, v, 'EX', '1000'] : ['set', k, v], expect: 'OK' });
    } else if (r < 54) {
      const k = rand.int(3) === 0 ? num() : str();
      m.ttl.delete(k);
      steps.push({ args: ['del', k], expect: model.delete(k) ? 1 : 0 });
    } else if (r < 62) {
      const k = num();
      const next = Number(model.get(k) ?? '0') + 1;
      model.set(k, String(next));
      steps.push({ args: ['incr', k], expect: next });
    } else if (r < 69) {
      const k = str();
      const add = value().slice(0, 30);
      const next = (model.get(k) ?? '') + add;
      if (next.length > 3000) continue; // keep records within a 4 KiB page
      model.set(k, next);
      steps.push({ args: ['append', k, add], expect: next.length });
    } else if (r < 77) {
      const ks = Array.from({ length: 1 + rand.int(6) }, () => (rand.int(4) === 0 ? num() : str()));
      steps.push({ args: ['mget', ...ks], expect: ks.map((k) => model.get(k) ?? null) });
    } else if (r < 83) {
      const pairs = Array.from({ length: 1 + rand.int(3) }, () => [str(), value()] as const);
      for (const [k, v] of pairs) {
        model.set(k, v);
        m.ttl.delete(k);
      }
      steps.push({ args: ['mset', ...pairs.flat()], expect: 'OK' });
    } else if (r < 87) {
      const k = str();
      steps.push({ args: ['exists', k], expect: model.has(k) ? 1 : 0 });
    } else if (r < 91) {
      const k = str();
      const old = model.get(k) ?? null;
      model.delete(k);
      m.ttl.delete(k);
      steps.push({ args: ['getdel', k], expect: old });
    } else if (r < 95) {
      const k = str();
      const v = value();
      const fresh = !model.has(k);
      if (fresh) model.set(k, v);
      steps.push({ args: ['setnx', k, v], expect: fresh ? 1 : 0 });
    } else if (r < 96) {
      const k = str();
      steps.push({ args: ['strlen', k], expect: model.get(k)?.length ?? 0 });
    } else if (r < 98) {
      const k = str();
      if (!model.has(k)) steps.push({ args: ['ttl', k], expect: -2 });
      else if (m.ttl.has(k)) steps.push({ args: ['ttl', k], expect: null, within: [990, 1000] });
      else steps.push({ args: ['ttl', k], expect: -1 });
    } else if (r < 99 || rand.int(4) !== 0) {
      const k = str();
      const v = value();
      const old = model.get(k) ?? null;
      model.set(k, v);
      m.ttl.delete(k);
      steps.push({ args: ['set', k, v, 'GET'], expect: old });
    } else {
      model.clear();
      m.ttl.clear();
      steps.push({ args: ['flushall'], expect: 'OK' });
    }
  }
  return steps;
}

async function modelRun(mode: KvMode, seed: number, server?: () => number): Promise<void> {
  const { kv, client, stop } = await start(mode, server);
  try {
    const rand = new Rand(seed);
    const m: Model = { values: new Map(), ttl: new Set() };
    const model = m.values;
    let checked = 0;
    const flushed = (): number => Number(/flushed_pages:(\d+)/.exec(kv.info(['pd3kv']))![1]);
    // 100 rounds, and for the remote modes more (up to 400) until over 20 pages have moved to remote
    // memory: how many a FLUSHALL discards before their write lands depends on timing (a slow disk
    // behind the tier, a busy machine), and the checks below need a run that really used the server.
    const enough = (round: number): boolean => round >= 100 && (mode === 'local' || flushed() > 20 || round >= 400);
    for (let round = 0; !enough(round); ++round) {
      const steps = drawBatch(rand, m, 40);
      const tx = round % 6 === 5;
      const p = tx ? client.multi() : client.pipeline();
      for (const s of steps) p.call(s.args[0]!, ...s.args.slice(1));
      const replies = (await p.exec())!;
      replies.forEach(([err, got], i) => {
        expect(err, `${mode} round ${round}: ${steps[i]!.args.slice(0, 3).join(' ')}`).toBeNull();
        const s = steps[i]!;
        const what = `${mode} round ${round} step ${i}: ${s.args.join(' ').slice(0, 80)}`;
        if (s.within === undefined) expect(got, what).toEqual(s.expect);
        else expect(got as number, what).toSatisfy((t: number) => t >= s.within![0] && t <= s.within![1]);
        checked++;
      });
    }
    // Everything, once more, in one MGET: the final state.
    const keys = [...Array.from({ length: 120 }, (_, i) => `key:${i}`), ...Array.from({ length: 20 }, (_, i) => `num:${i}`)];
    expect(await client.mget(...keys)).toEqual(keys.map((k) => model.get(k) ?? null));
    expect(await client.dbsize()).toBe(model.size);
    const info = kv.info(['pd3kv']);
    const field = (name: string): number => Number(new RegExp(`${name}:(\\d+)`).exec(info)![1]);
    console.log(`${mode}: ${checked} replies checked; flushed ${field('flushed_pages')} pages, local ${field('local_hits')}, ` +
      `zone ${field('zone_hits')}, leap ${field('leap_hits')}, remote reads ${field('remote_reads')}`);
    if (mode === 'local') {
      expect(field('flushed_pages')).toBe(0);
    } else {
      expect(field('flushed_pages')).toBeGreaterThan(20);
      expect(field('resident_pages')).toBeLessThanOrEqual(4 + 8); // the budget, plus writes in flight
      expect(field('remote_reads') + field('zone_hits') + field('leap_hits')).toBeGreaterThan(50);
      expect(field('remote_read_failures') + field('flush_failures')).toBe(0);
      // Each remote read is timed, issue to answer: a loopback round trip takes microseconds, not 0.
      if (field('remote_reads') > 0) expect(field('remote_read_us')).toBeGreaterThanOrEqual(field('remote_reads'));
      else expect(field('remote_read_us')).toBe(0);
    }
  } finally {
    await stop();
  }
}

describe('pd3-kv modes against a JS model (no stale reads)', () => {
  const modes: KvMode[] = ['local', 'sync', 'async', 'leap', 'pd3-noprefetch', 'pd3'];
  modes.forEach((mode, i) => {
    it(`${mode}: random pipelines and MULTI/EXEC agree with the model`, () => modelRun(mode, 1000 + i), 30_000);
  });

  it('async: a pipeline of GETs of flushed keys is answered in order from one batch of reads', async () => {
    const { kv, client, stop } = await start('async');
    try {
      const keys = Array.from({ length: 200 }, (_, i) => `bulk:${i}`);
      await client.mset(...keys.flatMap((k) => [k, `value-of-${k}-`.padEnd(200, 'x')]));
      await waitUntil(() => Number(/flushed_pages:(\d+)/.exec(kv.info(['pd3kv']))![1]) > 5, 5000, 'pages flushed');
      const before = kv.stats.remoteReads;
      const p = client.pipeline();
      for (const k of keys) p.get(k);
      const got = (await p.exec())!.map(([, v]) => v);
      expect(got).toEqual(keys.map((k) => `value-of-${k}-`.padEnd(200, 'x')));
      expect(kv.stats.remoteReads - before).toBeGreaterThan(100);
    } finally {
      await stop();
    }
  });
});

describe('pd3-kv against a memory server with the SSD tier', () => {
  // The seeds of these modes' runs above: the same commands, now over the tier.
  (['sync', 'async'] as const).forEach((mode, i) => {
    it(`${mode}: the model run agrees with a DRAM budget of four pages`, () => modelRun(mode, 1001 + i, () => tieredPort), 30_000);
  });
});
