// workers.test.ts — worker_threads sharing one segment: concurrent checkAndReturn (each item taken
// exactly once, never torn) and per-handle completion routing of reads and writes.
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { Pd3Host } from '../dist/host/index.js';
import { AgentSession } from '../dist/dpu/index.js';
import { ModelAgent, uniqueName } from './helpers.js';

const cleanup: Array<() => void> = [];
afterEach(() => {
  while (cleanup.length) cleanup.pop()!();
});

function run<T>(file: string, data: object): Promise<T> {
  return new Promise((resolve, reject) => {
    const w = new Worker(new URL(`./workers/${file}`, import.meta.url), { workerData: data });
    w.once('message', resolve);
    w.once('error', reject);
    w.once('exit', (code) => code !== 0 && reject(new Error(`worker exited with ${code}`)));
  });
}

describe('worker_threads on one segment', () => {
  it('4 workers (TS and native checkAndReturn) take every item exactly once, untorn', async () => {
    const KEYS = 20_000;
    const host = Pd3Host.create({ name: uniqueName('wk'), loadingZoneItems: 32768, loadingZoneBytes: 4 << 20 });
    const agent = AgentSession.attach(host.name);
    cleanup.push(() => (agent.close(), host.close()));
    for (let k = 0; k < KEYS; ++k) {
      const v = Buffer.alloc(16);
      v.writeUInt32LE(k, 0);
      v.writeUInt32LE(k ^ 0xabcdef, 12);
      expect(agent.produce(0, Buffer.from(`k${k}`), v)).toBeGreaterThan(0);
    }
    const results = await Promise.all(
      [1, 7, 13, 19].map((order, i) =>
        run<{ got: number[]; bad: number[] }>('lz-consumer.mjs', { name: host.name, impl: i % 2 ? 'native' : 'ts', keys: KEYS, order }),
      ),
    );
    const seen = new Uint8Array(KEYS);
    for (const r of results) {
      expect(r.bad).toEqual([]);
      for (const k of r.got) seen[k]! += 1;
    }
    expect(seen.every((n) => n === 1)).toBe(true);
    expect(agent.clean()).toBe(KEYS);
    expect(host.stats().lz_consumed).toBe(KEYS);
  });

  it('routes each handle its own completions while the main thread issues too', async () => {
    const host = Pd3Host.create({ name: uniqueName('route') });
    const agent = new ModelAgent(host.name);
    cleanup.push(() => (agent.close(), host.close()));
    agent.regions.set(1, Buffer.alloc(32 * 4000));
    // The agent runs on this thread's event loop; workers and this thread issue concurrently.
    agent.start();
    const workers = [0, 1000, 2000].map((base) => run<{ mismatches: number; leftover: number }>('reader.mjs', { name: host.name, region: 1, base, count: 300 }));
    let mine = 0;
    for (let i = 0; i < 300; ++i) {
      const data = Buffer.alloc(32, 0x77);
      await host.write(1, (3000 + i) * 32, data);
      if ((await host.read(1, (3000 + i) * 32, 32)).equals(data)) mine++;
    }
    const results = await Promise.all(workers);
    for (const r of results) expect(r).toEqual({ mismatches: 0, leftover: 0 });
    expect(mine).toBe(300);
    expect(host.inflight).toBe(0);
  });
});
