// page-server.test.ts — the page server example (examples/page-server/) end to end: real grpc-js
// clients against a model in every mode (no stale page, also after eviction), PD3's gRPC parser on
// a real pd3-agent serving most misses of a read stream from the Loading Zone, bad requests answered
// with gRPC statuses, and the CLI's ready line, counters, clean stop and refusals.
import * as grpc from '@grpc/grpc-js';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, startDaemon, startMemserver, type Daemon } from '../dist/examples/harness/processes.js';
import {
  MODES,
  PAGE_SIZE,
  PAGES_PARSER_CONFIG,
  PagesClient,
  VerifyModel,
  pageContent,
  pageStamp,
  runLoad,
  startPageServer,
  type PageServerMode,
} from '../dist/examples/page-server/index.js';
import { CachedPageStore } from '../dist/examples/page-server/cached-store.js';
import { Lanes } from '../dist/examples/page-server/lanes.js';
import { PageCache } from '../dist/examples/page-server/page-cache.js';
import { PageServerStats } from '../dist/examples/page-server/stats.js';
import { SyncMissPath } from '../dist/examples/page-server/sync-miss-path.js';
import { WriteBack } from '../dist/examples/page-server/write-back.js';
import { uniqueName } from './helpers.js';
import { Rig, logEvents, within } from './integration-helpers.js';

const SERVER_CLI = fileURLToPath(new URL('../dist/examples/page-server/cli.js', import.meta.url));
const CLIENT_CLI = fileURLToPath(new URL('../dist/examples/page-server/client.js', import.meta.url));

const token = randomBytes(16).toString('hex');
let memserver: Daemon & { port: number };
const rig = new Rig();

beforeAll(async () => {
  memserver = await startMemserver({ token, capacity: '256M' });
});
afterAll(async () => {
  await memserver?.stop(2000);
});
afterEach(() => rig.teardown());

/** A page server in `mode` on loopback (and, in pd3 modes, a pd3-agent on its segment); resolves
 *  with the server and the address clients use: the tee port in mode pd3, else the server's. */
async function serve(mode: PageServerMode, pages: number, cachePages: number, memPort = memserver.port, workers = 2) {
  const segment = uniqueName(`ps-${mode}`);
  const server = await startPageServer({
    mode, pages, cachePages, segment, workers, memservers: [`127.0.0.1:${memPort}`], token,
  });
  rig.defer(() => server.close());
  let target = `127.0.0.1:${server.port}`;
  if (mode === 'pd3' || mode === 'pd3-noprefetch') {
    const prefetch = mode === 'pd3'
      ? ['--prefetch-parser', 'grpc', '--prefetch-parser-config', PAGES_PARSER_CONFIG,
          '--mirror', 'tee', '--app', target, '--tee-listen', '127.0.0.1:0']
      : [];
    const agent = await rig.agent(segment, [memPort], token, prefetch);
    if (mode === 'pd3') target = `127.0.0.1:${String(agent.ready.teePort)}`;
    const deadline = Date.now() + 5000;
    while (!server.host!.agentAlive()) {
      if (Date.now() > deadline) throw new Error('the agent never beat');
      await new Promise((r) => setTimeout(r, 5));
    }
  }
  const client = new PagesClient(target);
  rig.defer(() => client.close());
  return { server, client, target };
}

/** The gRPC status code a call failed with ('ok' if it did not fail). */
async function statusOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    const code = (e as grpc.ServiceError).code;
    return typeof code === 'number' ? grpc.status[code]! : String(e);
  }
}

/** One turn of the event loop, for completions to run. */
const settle = (): Promise<void> => new Promise((r) => setImmediate(r));
/** The version a page's stamp says, or undefined. */
const version = (page: Buffer | undefined): number | undefined => (page === undefined ? undefined : pageStamp(page)?.version);

describe.each(MODES)('mode %s', (mode) => {
  it('random GetPage/PutPage through grpc-js match the model; a page read after a Put is new, also once evicted', async () => {
    const pages = 300;
    const { server, client, target } = await serve(mode, pages, 8);
    const model = new VerifyModel();
    const report = await runLoad({ target, pages, ops: 500, callers: 8, workload: 'A', verify: true, model, seed: 7 });
    expect(report.errorSamples).toEqual([]);
    expect(report.mismatchSamples).toEqual([]);
    expect(report.ops).toBe(500);
    expect(report.puts).toBeGreaterThan(150);
    expect(report.verified).toBe(report.gets);

    // Explicitly: write pages, push them out of the 8-page cache, read them back (alone and batched).
    const written = [3, 150, 299, 42];
    for (const id of written) {
      const v = model.nextVersion();
      await client.putPage(id, pageContent(id, v));
      model.written(id, v);
    }
    for (let id = 100; id < 140; id++) expect(model.check(id, await client.getPage(id))).toBeNull();
    for (const id of written) expect(model.check(id, await client.getPage(id))).toBeNull();
    const batch = await client.getPages([...written, 7, 8]);
    expect(batch).toHaveLength(written.length + 2);
    [...written, 7, 8].forEach((id, i) => expect(model.check(id, batch[i]!)).toBeNull());

    const stats = server.stats();
    if (mode === 'local') {
      expect(stats.remoteReads).toBe(0);
    } else {
      expect(stats.evictions).toBeGreaterThan(100);
      expect(stats.dirtyEvictions).toBeGreaterThan(50);
      expect(stats.remoteReads + stats.zoneHits).toBeGreaterThan(100);
    }
    if (mode === 'async') expect(stats.readBatches).toBeGreaterThan(0);
  });
});

describe('mode pd3 with the gRPC parser on the agent', () => {
  it('serves most local misses of a read stream of evicted pages by checkAndReturn', async () => {
    const pages = 1000;
    // One application thread, as the paper's page server per core: requests queue behind a miss,
    // which is the lead the agent's prefetch runs in.
    const { server, client, target } = await serve('pd3', pages, 16, memserver.port, 1);
    // Write 100 pages: the cache keeps 16, the rest are flushed and leave the agent's Host View.
    const model = new VerifyModel();
    for (let id = 0; id < 100; id++) {
      const v = model.nextVersion();
      await client.putPage(id, pageContent(id, v));
      model.written(id, v);
    }
    const before = server.stats();
    const report = await runLoad({ target, pages, ops: 600, callers: 16, workload: 'C', verify: true, model, seed: 11 });
    expect(report.errorSamples).toEqual([]);
    expect(report.mismatchSamples).toEqual([]);
    const after = server.stats();
    const zone = after.zoneHits - before.zoneHits;
    const remote = after.remoteReads - before.remoteReads;
    expect(zone + remote).toBeGreaterThan(400); // nearly every read missed the 16-page cache
    expect(zone / (zone + remote)).toBeGreaterThan(0.5);
  });
});

describe('pd3 modes without --memservers', () => {
  it('wait for the agent, load through it, and when it dies fail misses fast and keep evicted pages', async () => {
    const segment = uniqueName('ps-wait');
    const starting = startPageServer({ mode: 'pd3-noprefetch', pages: 200, cachePages: 4, segment, agentWaitMs: 10_000 });
    while (!existsSync(`/dev/shm/${segment}`)) await new Promise((r) => setTimeout(r, 5));
    const agent = await startAgent(segment, [memserver.port], token);
    const server = await starting;
    rig.defer(() => server.close());
    const client = new PagesClient(`127.0.0.1:${server.port}`);
    rig.defer(() => client.close());
    expect(version(await client.getPage(77))).toBe(0); // loaded through the agent
    await agent.kill();
    expect(await within(statusOf(client.getPage(78)), 5000, 'a miss with the agent gone')).toBe('UNAVAILABLE');
    for (let id = 100; id < 110; id++) await client.putPage(id, pageContent(id, 3)); // evictions that cannot be written
    await new Promise((r) => setTimeout(r, 50));
    expect(server.stats().flushRetries).toBeGreaterThan(0);
    for (let id = 100; id < 106; id++) expect(version(await client.getPage(id))).toBe(3); // from the write-back
  });
});

describe('mode leap', () => {
  it('a sequential scan is mostly served from pages the Leap prefetcher read into the cache', async () => {
    const { server, client } = await serve('leap', 400, 32);
    for (let id = 0; id < 200; id++) expect(version(await client.getPage(id))).toBe(0);
    const stats = server.stats();
    expect(stats.leapPrefetches).toBeGreaterThan(100);
    expect(stats.leapHits).toBeGreaterThan(100);
    expect(stats.remoteReads).toBeLessThan(100);
  });
});

describe('bad requests', () => {
  it('get a gRPC error status, never a crash', async () => {
    const pages = 100;
    const { server, client } = await serve('sync', pages, 4);
    expect(await statusOf(client.putPage(5, Buffer.alloc(100)))).toBe('INVALID_ARGUMENT');
    expect(await statusOf(client.putPage(5, Buffer.alloc(PAGE_SIZE + 1)))).toBe('INVALID_ARGUMENT');
    expect(await statusOf(client.putPage(5, Buffer.alloc(0)))).toBe('INVALID_ARGUMENT');
    expect(await statusOf(client.putPage(pages, pageContent(pages, 1)))).toBe('NOT_FOUND');
    expect(await statusOf(client.getPage(pages))).toBe('NOT_FOUND');
    expect(await statusOf(client.call('GetPage', { id: '18446744073709551615' }))).toBe('NOT_FOUND');
    expect(await statusOf(client.getPages([1, 2, pages + 7]))).toBe('NOT_FOUND');
    expect(await statusOf(client.getPages(Array.from({ length: 257 }, (_, i) => i % pages)))).toBe('INVALID_ARGUMENT');
    // Bytes that are no protobuf message at all.
    const garbage = await statusOf(new Promise((resolve, reject) => {
      client.raw.makeUnaryRequest('/pagestore.Pages/PutPage', (b: Buffer) => b, (b: Buffer) => b,
        Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]), (e, v) => (e ? reject(e) : resolve(v)));
    }));
    expect(garbage).not.toBe('ok');
    // The page 5 was never replaced, and the server still answers.
    expect(new VerifyModel().check(5, await client.getPage(5))).toBeNull();
    expect(server.stats().badRequests).toBe(8);
  });

  it('remote memory gone: misses fail UNAVAILABLE, cached pages are still served', async () => {
    const own = await rig.memserver({ token, capacity: '64M' });
    const { client } = await serve('sync', 100, 4, own.port);
    await client.putPage(1, pageContent(1, 9));
    await own.kill();
    expect(await within(statusOf(client.getPage(50)), 5000, 'a miss with the memory server gone')).toBe('UNAVAILABLE');
    expect(pageStamp(await client.getPage(1))).toEqual({ id: 1, version: 9 }); // the cached page, as written
  });
});

describe('pd3-page-server CLI', () => {
  it('logs ready with the port, serves the client CLI with --verify, logs its counters and stops on SIGTERM', async () => {
    const cli = await startDaemon(SERVER_CLI, ['--mode', 'sync', '--listen', '127.0.0.1:0', '--pages', '300',
      '--cache-pages', '8', '--memservers', `127.0.0.1:${memserver.port}`], token);
    rig.defer(() => cli.stop(2000));
    const port = Number(cli.ready.port);
    expect(port).toBeGreaterThan(0);
    expect(cli.ready.mode).toBe('sync');
    const out = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = spawn(process.execPath, [CLIENT_CLI, '--target', `127.0.0.1:${port}`, '--pages', '300',
        '--ops', '300', '--callers', '4', '--workload', 'A', '--verify'], { stdio: ['ignore', 'pipe', 'inherit'] });
      let stdout = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.on('exit', (code) => resolve({ code, stdout }));
    });
    expect(out.code).toBe(0);
    const report = JSON.parse(out.stdout) as { ops: number; mismatches: number; p50Us: number; p99Us: number; server: Record<string, number> };
    expect(report.ops).toBe(300);
    expect(report.mismatches).toBe(0);
    expect(report.p99Us).toBeGreaterThanOrEqual(report.p50Us);
    expect(report.server.evictions).toBeGreaterThan(0);
    expect(await cli.stop()).toBe(0);
    const [stats] = logEvents(cli, 'stats');
    expect(stats?.evictions).toBeGreaterThan(0);
    expect(logEvents(cli, 'stopped')).toHaveLength(1);
  });

  it('refuses bad flags with exit status 2', () => {
    const env = { ...process.env };
    delete env.PD3_TOKEN;
    const run = (cli: string, args: string[]) => spawnSync(process.execPath, [cli, ...args], { env, encoding: 'utf8' });
    const refusals: Array<[string[], RegExp]> = [
      [[], /--mode is required/],
      [['--mode', 'fast'], /--mode: must be one of/],
      [['--mode', 'local', '--colour', 'red'], /unknown flag --colour/],
      [['--mode', 'sync'], /--memservers/],
      [['--mode', 'pd3'], /--segment/],
      [['--mode', 'local', '--pages', '0'], /--pages/],
      [['--mode', 'local', '--cache-pages', '5', '--cache-percent', '2'], /not both/],
      [['--mode', 'local', '--cache-percent', '101'], /--cache-percent/],
      [['--mode', 'async', '--memservers', '127.0.0.1:1'], /no auth token/],
      [['--mode', 'pd3', '--segment', 'a/b'], /segment/],
      [['--mode', 'sync', '--memservers', '127.0.0.1:1', '--token', 't', '--zone-wait-us', '5'], /--zone-wait-us: applies to mode pd3 only/],
      [['--mode', 'pd3', '--segment', 'x', '--zone-wait-us', '5000000'], /--zone-wait-us: must be from 0 to 1000000/],
      [['--mode', 'pd3', '--segment', 'x', '--zone-wait-us', 'later'], /--zone-wait-us: must be auto or a whole number from 0 to 1000000, got "later"/],
    ];
    for (const [args, why] of refusals) {
      const r = run(SERVER_CLI, args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(why);
    }
    expect(run(CLIENT_CLI, ['--target', '127.0.0.1:1']).status).toBe(2);
    expect(run(CLIENT_CLI, ['--target', '127.0.0.1:1', '--pages', '5', '--workload', 'E']).status).toBe(2);
  });
});

/** Remote memory whose reads and writes complete only when the test says so (RemotePages' shape). */
class ManualRemote {
  readonly pages = new Map<number, Buffer>();
  readonly reads: Array<{ id: number; done: (page: Buffer) => void }> = [];
  readonly writes: Array<{ id: number; record: Buffer; done: () => void; fail: (e: Error) => void }> = [];

  readPage(id: number): Promise<Buffer> {
    return new Promise((resolve) => this.reads.push({ id, done: resolve }));
  }

  writeRecord(id: number, record: Uint8Array): Promise<void> {
    return new Promise((resolve, reject) => this.writes.push({ id, record: Buffer.from(record), done: resolve, fail: reject }));
  }

  kick(): void {}

  /** Answers the oldest read of `id` with what remote memory holds now (or `page`). */
  answerRead(id: number, page?: Buffer): void {
    const at = this.reads.findIndex((r) => r.id === id);
    const [read] = this.reads.splice(at, 1);
    read!.done(page ?? this.pages.get(id) ?? pageContent(id, 0));
  }

  /** Executes the oldest write (its record's page lands in remote memory). */
  completeWrite(): number {
    const w = this.writes.shift()!;
    this.pages.set(w.id, w.record.subarray(w.record.length - PAGE_SIZE));
    w.done();
    return w.id;
  }
}

describe('page store internals', () => {
  function store(cachePages: number) {
    const remote = new ManualRemote();
    const stats = new PageServerStats();
    const writeBack = new WriteBack(remote, stats, null);
    return { remote, stats, writeBack, store: new CachedPageStore(cachePages, writeBack, new SyncMissPath(remote), null, stats) };
  }

  it('a read answered after a Put of the same page neither replaces the Put nor serves later reads', async () => {
    const { remote, store: s } = store(2);
    const old = s.get(1) as Promise<Buffer>; // a miss: the read is in flight
    s.put(1, pageContent(1, 5));
    remote.answerRead(1);
    expect(version(await old)).toBe(0); // concurrent with the Put: either version is right
    expect(version(s.get(1) as Buffer)).toBe(5);

    // The same with the Put's page evicted and written back before the old read comes back.
    const stale = s.get(2) as Promise<Buffer>;
    s.put(2, pageContent(2, 7));
    s.put(3, pageContent(3, 1));
    s.put(4, pageContent(4, 1)); // evicts 2 (and 3 or 1): its write is in flight
    expect(remote.writes.map((w) => w.id)).toContain(2);
    expect(version(s.get(2) as Buffer)).toBe(7); // served from the write-back
    while (remote.writes.length > 0) remote.completeWrite();
    await settle();
    const fresh = s.get(2);
    expect(fresh).toBeInstanceOf(Promise); // a new read, not the superseded one
    expect(remote.reads.filter((r) => r.id === 2)).toHaveLength(2);
    remote.answerRead(2, pageContent(2, 0)); // the old read answers last-written-before-the-Put bytes
    remote.answerRead(2);
    expect(version(await stale)).toBe(0);
    expect(version(await fresh)).toBe(7);
    expect(version(s.get(2) as Buffer)).toBe(7);
  });

  it('writes back one write per page at a time, newest bytes last; a failed write is retried', async () => {
    const { remote, stats, writeBack } = store(1);
    writeBack.flush(9, pageContent(9, 1));
    writeBack.flush(9, pageContent(9, 2));
    writeBack.flush(9, pageContent(9, 3));
    expect(remote.writes).toHaveLength(1); // the next one waits for this one
    expect(version(writeBack.page(9))).toBe(3);
    remote.completeWrite();
    await settle();
    expect(remote.writes).toHaveLength(1);
    expect(version(remote.writes[0]!.record.subarray(-PAGE_SIZE))).toBe(3); // 2 was skipped: 3 is newer
    remote.writes.shift()!.fail(new Error('server down'));
    await settle();
    expect(stats.flushRetries).toBe(1);
    expect(version(writeBack.page(9))).toBe(3); // still served from here
    await new Promise((r) => setTimeout(r, 30));
    expect(remote.writes).toHaveLength(1); // retried
    const idle = writeBack.idle();
    remote.completeWrite();
    await idle;
    expect(writeBack.page(9)).toBeUndefined();
    expect(version(remote.pages.get(9))).toBe(3);
  });

  it('the CLOCK cache gives referenced pages a second chance and reports dirty victims', () => {
    const cache = new PageCache(3);
    for (const id of [1, 2, 3]) expect(cache.insert(id, pageContent(id, 0), { dirty: id === 2, prefetched: false })).toBeNull();
    // Every frame was referenced on insert: the sweep clears all three and takes frame 0 (page 1).
    expect(cache.insert(4, pageContent(4, 0), { dirty: false, prefetched: false })?.id).toBe(1);
    cache.get(2); // 2 and 3 had their bits cleared by the sweep; 2 is referenced again
    const victim = cache.insert(5, pageContent(5, 0), { dirty: false, prefetched: false });
    expect(victim?.id).toBe(3);
    expect(victim?.dirty).toBe(false);
    const next = cache.insert(6, pageContent(6, 0), { dirty: false, prefetched: true });
    expect(next?.id).toBe(2);
    expect(next?.dirty).toBe(true);
    expect(version(next?.page)).toBe(0);
    expect(cache.takePrefetchMark(6)).toBe(true);
    expect(cache.takePrefetchMark(6)).toBe(false);
    expect(() => cache.insert(6, pageContent(6, 0), { dirty: false, prefetched: false })).toThrow(/already cached/);
  });

  it('lanes run at most N requests at once, in arrival order', async () => {
    const lanes = new Lanes(2);
    const order: number[] = [];
    let running = 0;
    let peak = 0;
    const task = (n: number) => async () => {
      running++;
      peak = Math.max(peak, running);
      order.push(n);
      await new Promise((r) => setTimeout(r, 2));
      running--;
      return n;
    };
    const results = await Promise.all([1, 2, 3, 4, 5].map((n) => lanes.run(task(n))));
    expect(results).toEqual([1, 2, 3, 4, 5]);
    expect(order).toEqual([1, 2, 3, 4, 5]);
    expect(peak).toBe(2);
    await expect(lanes.run(() => { throw new Error('boom'); })).rejects.toThrow('boom');
    expect(await lanes.run(() => 6)).toBe(6); // the failed task freed its lane
  });
});
