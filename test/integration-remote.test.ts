// integration-remote.test.ts — Pd3Host driving a real pd3-agent and pd3-memserver over loopback:
// random reads and writes checked against a model, ordering of requests in flight, several
// worker_threads at once, and region bounds and isolation with the statuses the caller gets.
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import type { Pd3Host } from '../dist/host/index.js';
import { Rand, Rig, codeOf, randomModelRun, readAll, within } from './integration-helpers.js';

const TOKEN = 'integration-remote-token';

let rig = new Rig();
afterEach(async () => {
  const done = rig;
  rig = new Rig();
  await done.teardown();
});

/** Memory server + host segment + agent, ready for requests. */
async function cluster(tag: string): Promise<Pd3Host> {
  const server = await rig.memserver({ token: TOKEN, capacity: '64M' });
  const host = rig.host(tag);
  await rig.agent(host.name, [server.port], TOKEN);
  return host;
}

/** What a worker of remote-worker.mjs reports. */
interface WorkerReport {
  region: number;
  capacity: number;
  result: { reads: number; writes: number; mismatchCount: number; mismatches: Array<[number, number, number]> };
  model: Uint8Array;
  leftover: number;
}

function runWorker(data: object): Promise<WorkerReport> {
  return new Promise((resolve, reject) => {
    const w = new Worker(new URL('./workers/remote-worker.mjs', import.meta.url), { workerData: data });
    rig.defer(() => w.terminate());
    w.once('message', resolve);
    w.once('error', reject);
    w.once('exit', (code) => code !== 0 && reject(new Error(`worker exited with ${code}`)));
  });
}

describe('remote memory through a real agent and memory server', () => {
  it('5,000 random reads and writes over 3 regions match a model, in-flight order included', async () => {
    const host = await cluster('model');
    const regions = [];
    for (const bytes of [65536, 100_000, 5 * 4096 + 1]) {
      const { region, capacity } = await host.allocate(bytes);
      expect(capacity).toBeGreaterThanOrEqual(bytes);
      regions.push({ region, model: Buffer.alloc(capacity) });
    }
    expect(new Set(regions.map((r) => r.region)).size).toBe(3);
    // A new region reads as zeros (no bytes of an earlier tenant), which the model assumes.
    for (const r of regions) expect((await readAll(host, r.region, r.model.length)).equals(r.model)).toBe(true);

    const run = await within(randomModelRun(host, regions, 5000, new Rand(0x5eed), 32), 30_000, 'random run');
    expect(run.mismatches).toEqual([]);
    expect(run.mismatchCount).toBe(0);
    expect(run.reads).toBeGreaterThan(2000);
    expect(run.writes).toBeGreaterThan(2000);

    // Read-after-write and write-after-read from one thread, nothing awaited in between: a read
    // sees every write issued before it and none issued after it.
    const rand = new Rand(77);
    const [a] = regions;
    for (let i = 0; i < 200; ++i) {
      const lo = rand.int(a!.model.length - 8192);
      const first = rand.bytes(1 + rand.int(4096));
      const secondAt = lo + rand.int(first.length);
      const second = rand.bytes(1 + rand.int(4096));
      const span = Math.max(first.length, secondAt - lo + second.length);
      const before = Buffer.from(a!.model.subarray(lo, lo + span));
      const pBefore = host.read(a!.region, lo, span);
      const w1 = host.write(a!.region, lo, first);
      const w2 = host.write(a!.region, secondAt, second);
      const pAfter = host.read(a!.region, lo, span);
      first.copy(a!.model, lo);
      second.copy(a!.model, secondAt);
      const after = Buffer.from(a!.model.subarray(lo, lo + span));
      const [gotBefore, , , gotAfter] = await Promise.all([pBefore, w1, w2, pAfter]);
      expect(gotBefore.equals(before), `read before the writes, round ${i}`).toBe(true);
      expect(gotAfter.equals(after), `read after two overlapping writes, round ${i}`).toBe(true);
    }

    for (const r of regions) expect((await readAll(host, r.region, r.model.length)).equals(r.model)).toBe(true);
    expect(host.inflight).toBe(0);
  });

  it('3 worker_threads and the main thread, each on its own region, all match their models', async () => {
    const host = await cluster('threads');
    const reports = [1, 2, 3].map((w) => runWorker({ name: host.name, bytes: 65536, ops: 1500, seed: 1000 + w, batch: 16 }));
    const { region, capacity } = await host.allocate(65536);
    const mine = { region, model: Buffer.alloc(capacity) };
    const main = await within(randomModelRun(host, [mine], 1500, new Rand(999), 16), 30_000, 'main thread run');
    const done = await within(Promise.all(reports), 30_000, 'workers');

    expect(main.mismatches).toEqual([]);
    expect(main.reads + main.writes).toBe(1500);
    const ids = new Set([region]);
    for (const d of done) {
      expect(d.result.mismatches).toEqual([]);
      expect(d.result.mismatchCount).toBe(0);
      expect(d.result.reads + d.result.writes).toBe(1500);
      expect(d.leftover).toBe(0);
      ids.add(d.region);
    }
    expect(ids.size).toBe(4); // four distinct regions
    // What each worker wrote is in its region, seen from the main thread; no thread's writes
    // reached another's region.
    for (const d of done) {
      const got = await readAll(host, d.region, d.capacity);
      expect(got.equals(Buffer.from(d.model))).toBe(true);
    }
    expect((await readAll(host, mine.region, capacity)).equals(mine.model)).toBe(true);
    expect(host.inflight).toBe(0);
  });

  it('enforces region bounds and ids, and writes to one region never change another', async () => {
    const host = await cluster('bounds');
    const A = await host.allocate(8192);
    const B = await host.allocate(8192);
    const C = await host.allocate(4096);
    const patternB = new Rand(3).bytes(B.capacity);
    await host.write(B.region, 0, patternB);
    const modelA = Buffer.alloc(A.capacity);
    const fillA = new Rand(4).bytes(A.capacity);
    await host.write(A.region, 0, fillA);
    fillA.copy(modelA);

    // The last bytes of A are reachable; one byte more is not, and a refused write changes nothing.
    expect(await host.write(A.region, A.capacity - 4096, Buffer.alloc(4096, 0xa1))).toBe(4096);
    modelA.fill(0xa1, A.capacity - 4096);
    expect((await host.read(A.region, A.capacity - 1, 1))[0]).toBe(0xa1);
    const cap = A.capacity;
    expect(await codeOf(host.write(A.region, cap - 10, Buffer.alloc(20, 0xee)))).toBe('PD3_E_RANGE');
    expect(await codeOf(host.write(A.region, cap, Buffer.alloc(1, 0xee)))).toBe('PD3_E_RANGE');
    expect(await codeOf(host.read(A.region, cap - 100, 200))).toBe('PD3_E_RANGE');
    expect(await codeOf(host.read(A.region, cap, 1))).toBe('PD3_E_RANGE');
    // offset + size overflows 32 bits: wrapped, it would land at the region's start.
    expect(await codeOf(host.write(A.region, 2 ** 32 - 16, Buffer.alloc(32, 0xee)))).toBe('PD3_E_RANGE');
    expect(await codeOf(host.write(A.region, 2 ** 32 - 1, Buffer.alloc(4096, 0xee)))).toBe('PD3_E_RANGE');
    expect(await codeOf(host.read(A.region, 2 ** 32 - 8, 16))).toBe('PD3_E_RANGE');
    expect(await codeOf(host.write(A.region, 0xfffff000, Buffer.alloc(4096, 0xee)))).toBe('PD3_E_RANGE');

    // Unknown ids: local ids never handed out, region 0, another server's id.
    expect(await codeOf(host.read(4000, 0, 8))).toBe('PD3_E_BAD_REGION');
    expect(await codeOf(host.write(4000, 0, Buffer.alloc(8)))).toBe('PD3_E_BAD_REGION');
    expect(await codeOf(host.read(0, 0, 8))).toBe('PD3_E_BAD_REGION');
    expect(await codeOf(host.read(5 * 2 ** 16 + 1, 0, 8))).toBe('PD3_E_BAD_REGION'); // server 5's region 1
    expect(await codeOf(host.read(0xffff_0001, 0, 8))).toBe('PD3_E_BAD_REGION'); // server 65535's: a u32 past 2^31
    expect(await codeOf(host.deallocate(0xffff_0001))).toBe('PD3_E_BAD_REGION');
    // A released region is gone for reads, writes and a second release.
    await host.write(C.region, 0, Buffer.alloc(4096, 0xcc));
    await host.deallocate(C.region);
    expect(await codeOf(host.read(C.region, 0, 8))).toBe('PD3_E_BAD_REGION');
    expect(await codeOf(host.write(C.region, 0, Buffer.alloc(8)))).toBe('PD3_E_BAD_REGION');
    expect(await codeOf(host.deallocate(C.region))).toBe('PD3_E_BAD_REGION');
    // Its memory is not handed to the next region with its old contents.
    const D = await host.allocate(4096);
    expect((await host.read(D.region, 0, 4096)).equals(Buffer.alloc(4096))).toBe(true);

    // Random in-bounds writes to A, then: A is exactly its model (refused writes left no trace)
    // and B is byte for byte what was written to it.
    const rand = new Rand(5);
    const writes: Array<Promise<number>> = [];
    for (let i = 0; i < 300; ++i) {
      const size = 1 + rand.int(4096);
      const offset = i % 10 === 0 ? cap - size : rand.int(cap - size + 1);
      const data = rand.bytes(size);
      data.copy(modelA, offset);
      writes.push(host.write(A.region, offset, data));
    }
    await Promise.all(writes);
    expect((await host.read(A.region, 0, cap)).equals(modelA)).toBe(true);
    expect((await host.read(B.region, 0, B.capacity)).equals(patternB)).toBe(true);
    expect(host.inflight).toBe(0);
  });
});
