// host.test.ts — Pd3Host: create/attach errors, remote-memory round trips, statuses, back-pressure.
import { existsSync, writeFileSync, unlinkSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_PUBLISH_BATCH, Pd3Error, Pd3Host, constants as C } from '../dist/host/index.js';
import { AgentSession } from '../dist/dpu/index.js';
import { ModelAgent, uniqueName } from './helpers.js';

const cleanup: Array<() => void> = [];
afterEach(() => {
  while (cleanup.length) cleanup.pop()!();
});

function host(opts: Partial<Parameters<typeof Pd3Host.create>[0]> = {}): Pd3Host {
  const h = Pd3Host.create({ name: uniqueName('host'), ...opts });
  cleanup.push(() => h.close());
  return h;
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    return (e as Pd3Error).code;
  }
  return undefined;
}

describe('segment creation and attach', () => {
  it('creates /dev/shm/<name> with mode 0600 and removes it on close', () => {
    const h = Pd3Host.create({ name: uniqueName('life') });
    expect(existsSync(`/dev/shm/${h.name}`)).toBe(true);
    h.close();
    expect(existsSync(`/dev/shm/${h.name}`)).toBe(false);
  });

  it('refuses bad names and sizes with PD3_E_INVAL', () => {
    expect(codeOf(() => Pd3Host.create({ name: '' }))).toBe('PD3_E_INVAL');
    expect(codeOf(() => Pd3Host.create({ name: '../etc/x' }))).toBe('PD3_E_INVAL');
    expect(codeOf(() => Pd3Host.create({ name: 'x'.repeat(201) }))).toBe('PD3_E_INVAL');
    expect(codeOf(() => Pd3Host.create({ name: uniqueName('s'), requestRingBytes: 5000 }))).toBe('PD3_E_INVAL');
    expect(codeOf(() => Pd3Host.create({ name: uniqueName('s'), loadingZoneItems: 8 }))).toBe('PD3_E_INVAL');
    expect(() => Pd3Host.create({ name: uniqueName('s'), responseRingBytes: -1 })).toThrow(RangeError);
  });

  it('refuses a direct-mode placement it does not know, and a refraction past an hour', () => {
    const direct = { directOnly: true, directServers: ['127.0.0.1:1'], directToken: 't' };
    expect(() => Pd3Host.create({ name: uniqueName('s'), ...direct, directPlacement: 'nearest' as 'p2c' })).toThrow(
      /directPlacement must be 'p2c', 'most-free' or 'random'/);
    expect(() => Pd3Host.create({ name: uniqueName('s'), ...direct, directRefractionMs: 3_600_001 })).toThrow(RangeError);
    for (const directPlacement of ['p2c', 'most-free', 'random'] as const) {
      Pd3Host.create({ name: uniqueName('s'), ...direct, directPlacement, directRefractionMs: 50 }).close();
    }
  });

  it('refuses a duplicate name unless replace is set', () => {
    const a = host();
    expect(codeOf(() => Pd3Host.create({ name: a.name }))).toBe('PD3_E_EXISTS');
    const b = Pd3Host.create({ name: a.name, replace: true });
    cleanup.push(() => b.close());
  });

  it('refuses foreign, truncated and missing segments with the reason', () => {
    const foreign = `/dev/shm/${uniqueName('foreign')}`;
    writeFileSync(foreign, Buffer.alloc(65536, 0x5a));
    cleanup.push(() => unlinkSync(foreign));
    expect(() => AgentSession.attach(foreign)).toThrow(/PD3_E_BAD_MAGIC: .*magic/);
    const small = `/dev/shm/${uniqueName('small')}`;
    writeFileSync(small, Buffer.alloc(100));
    cleanup.push(() => unlinkSync(small));
    expect(() => AgentSession.attach(small)).toThrow(/PD3_E_BAD_SIZE/);
    expect(codeOf(() => AgentSession.attach(uniqueName('missing')))).toBe('PD3_E_NOENT');
    expect(codeOf(() => Pd3Host.attach(uniqueName('missing')))).toBe('PD3_E_NOENT');
  });
});

describe('remote memory through the agent side of the rings', () => {
  it('allocates, writes and reads back, matching a model', async () => {
    const h = host();
    const agent = new ModelAgent(h.name).start();
    cleanup.push(() => agent.close());
    const { region, capacity } = await h.allocate(1 << 16);
    expect(capacity).toBe(1 << 16);
    const model = Buffer.alloc(capacity);
    let seed = 7;
    const rnd = (n: number): number => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) % n;
    for (let round = 0; round < 50; ++round) {
      const ops: Array<Promise<unknown>> = [];
      for (let i = 0; i < 40; ++i) {
        const size = 1 + rnd(512);
        const offset = rnd(capacity - size);
        if (rnd(2) === 0) {
          const data = Buffer.alloc(size, rnd(256));
          data.copy(model, offset);
          ops.push(h.write(region, offset, data).then((n) => expect(n).toBe(size)));
        } else {
          const expected = Buffer.from(model.subarray(offset, offset + size));
          ops.push(h.read(region, offset, size).then((got) => expect(got.equals(expected)).toBe(true)));
        }
      }
      await Promise.all(ops);
    }
    expect(h.inflight).toBe(0);
    await h.deallocate(region);
  });

  it('stages requests with publishBatch and publishes them at the pump\'s poll or a full batch', async () => {
    expect(() => host({ publishBatch: MAX_PUBLISH_BATCH + 1 })).toThrow(`publishBatch must be at most ${MAX_PUBLISH_BATCH}`);
    const h = host({ publishBatch: 4 });
    const agent = new ModelAgent(h.name);
    cleanup.push(() => agent.close());
    agent.regions.set(1, Buffer.alloc(4096));
    const before = h.stats().host_requests;
    const writes = [0, 1, 2].map((i) => h.write(1, i * 8, Buffer.alloc(8, i + 1)));
    expect(h.stats().host_requests).toBe(before); // staged: not in the ring yet
    writes.push(h.write(1, 24, Buffer.alloc(8, 4))); // the fourth fills the batch
    expect(h.stats().host_requests).toBe(before + 4);
    const fifth = h.write(1, 32, Buffer.alloc(8, 5));
    expect(h.stats().host_requests).toBe(before + 4);
    h.poll(); // publishes what is staged
    expect(h.stats().host_requests).toBe(before + 5);
    agent.start();
    await Promise.all([...writes, fifth]);
    expect([...agent.regions.get(1)!.subarray(0, 40)]).toEqual([1, 2, 3, 4, 5].flatMap((v) => Array(8).fill(v)));
  });

  it('rejects with the status the agent sent (bad region, out of range)', async () => {
    const h = host();
    const agent = new ModelAgent(h.name).start();
    cleanup.push(() => agent.close());
    const { region } = await h.allocate(128);
    await expect(h.read(999, 0, 8)).rejects.toMatchObject({ code: 'PD3_E_BAD_REGION' });
    await expect(h.write(region, 120, Buffer.alloc(16))).rejects.toMatchObject({ code: 'PD3_E_RANGE' });
    await expect(h.read(region, 0, 8)).resolves.toHaveLength(8);
  });

  it('reports back-pressure when the request ring is full, never overwriting', async () => {
    const h = host({ requestRingBytes: C.RING_MIN_BYTES });
    const agent = new ModelAgent(h.name);
    cleanup.push(() => agent.close());
    agent.regions.set(1, Buffer.alloc(1 << 20));
    const accepted: Array<Promise<number>> = [];
    let refused: Promise<number> | null = null;
    for (let i = 0; i < 1000 && refused === null; ++i) {
      const before = h.inflight;
      const p = h.write(1, i * 100, Buffer.alloc(100, i & 0xff));
      if (h.inflight === before) refused = p; // not taken: the ring said PD3_E_AGAIN
      else accepted.push(p);
    }
    expect(refused).not.toBeNull();
    await expect(refused).rejects.toMatchObject({ code: 'PD3_E_AGAIN' });
    // 4 KiB ring, 128-byte slots: at most 32 fit.
    expect(accepted.length).toBeGreaterThan(10);
    expect(accepted.length).toBeLessThanOrEqual(32);
    expect(h.stats().host_ring_full).toBeGreaterThan(0);
    // The agent drains; every accepted write lands intact and new writes are accepted again.
    while (agent.serveOnce() > 0 || h.inflight > 0) await new Promise((r) => setImmediate(r));
    await Promise.all(accepted);
    const mem = agent.regions.get(1)!;
    for (let i = 0; i < accepted.length; ++i) expect(mem[i * 100 + 99]).toBe(i & 0xff);
    agent.start();
    await expect(h.write(1, 0, Buffer.alloc(100))).resolves.toBe(100);
  });

  it('rejects requests at once with PD3_E_AGENT_DOWN while no agent is attached', async () => {
    const h = host();
    await expect(h.read(1, 0, 8)).rejects.toMatchObject({ code: 'PD3_E_AGENT_DOWN' });
    await expect(h.write(1, 0, Buffer.alloc(8))).rejects.toMatchObject({ code: 'PD3_E_AGENT_DOWN' });
    expect(h.inflight).toBe(0);
  });

  it('rejects pending requests with PD3_E_CLOSED on close', async () => {
    const h = Pd3Host.create({ name: uniqueName('closed') });
    const agent = AgentSession.attach(h.name); // beats once: the request goes to the ring
    const p = h.read(1, 0, 8);
    agent.close();
    h.close();
    await expect(p).rejects.toMatchObject({ code: 'PD3_E_CLOSED' });
    expect(() => h.checkAndReturn(Buffer.from('k'), Buffer.alloc(8))).not.toThrow(); // mapping stays valid
  });

  it('tracks the agent heartbeat', async () => {
    const h = host({ agentTimeoutMs: 50 });
    expect(h.agentAlive()).toBe(false);
    expect(h.stats().agent_attaches).toBe(0);
    const agent = new ModelAgent(h.name);
    cleanup.push(() => agent.close());
    agent.session.beat();
    expect(h.agentAlive()).toBe(true);
    expect(h.stats().agent_attaches).toBe(1);
    await new Promise((r) => setTimeout(r, 120));
    expect(h.agentAlive()).toBe(false);
  });
});
