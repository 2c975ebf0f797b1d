// Hot-region migration between memory servers (docs/pool.md "Moving hot regions"): the heat meter
// and the move decision on their own; the migrator's native client against bad input; and, with a
// real etcd on loopback, the leader moving a hot named region from a loaded server to an idle one
// while a client writes and reads it through the move (checked against a model), no move below the
// ratio, and a move whose target stops answering given up with the source serving again.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Logger } from '../dist/cli/logger.js';
import { UsageError } from '../dist/cli/usage-error.js';
import { memberKey, parseMemberRecord, type MemberRecord } from '../dist/common/pool-record.js';
import { regionNameKey } from '../dist/common/tenant-record.js';
import { constants, Pd3Host, TenantSession } from '../dist/host/index.js';
import { decideMove, HeatMeter, MemServer, memServerOptions, parseMemServerCommand, serverLoad, STUCK_MOVE_MS, tenantCredential, TIER_MISS_WEIGHT, type RegionAccesses } from '../dist/memserver/index.js';
import { encodeRegionNameRecord } from '../dist/common/tenant-record.js';
import { addon } from '../dist/memserver/native.js';
import { uniqueName } from './helpers.js';
import { codeOf, httpGet, waitUntil } from './integration-helpers.js';
import { findEtcd, freePort, sharedEtcd } from './etcd-server.js';

const SECRET = 'migrate-secret-for-tests';
const TENANT = 'kv';
const MEMSERVER_CLI = new URL('../dist/memserver/cli.js', import.meta.url).pathname;
const credential = (tenant: string): string => tenantCredential(SECRET, tenant, constants.TENANT_CREDENTIAL_CONTEXT);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  while (cleanup.length > 0) await cleanup.pop()!();
});

async function startServer(extra: Record<string, unknown>): Promise<{ server: MemServer; lines: string[] }> {
  const lines: string[] = [];
  const logger = new Logger('memserver', 'info', (l) => lines.push(l));
  const options = memServerOptions({ listen: '127.0.0.1:0', token: SECRET, metrics: 'off', capacity: '64M', ...extra }, {});
  const server = await MemServer.start(options, logger);
  cleanup.push(() => server.close());
  return { server, lines };
}

function directHost(servers: MemServer[]): Pd3Host {
  const host = Pd3Host.create({
    name: uniqueName('migrate'),
    directOnly: true,
    directServers: servers.map((s) => `127.0.0.1:${s.port}`),
    directToken: credential(TENANT),
    directTenant: TENANT,
    directPlacement: 'most-free',
  });
  cleanup.push(() => host.close());
  return host;
}

const member = (serverId: number, load: number | undefined, hot: Array<[number, number]> = [], freeBytes = 1 << 30): MemberRecord => ({
  v: 1, serverId, address: `127.0.0.1:${7400 + serverId}`, capacityBytes: 1 << 30, freeBytes, harvestableBytes: 0, startedMs: 1, updatedMs: 2,
  ...(load === undefined ? {} : { load, hot: hot.map(([region, rate]) => ({ region, rate })) }),
});
const named = (region: number, key = `/p/regions/${TENANT}/r${region}`, capacity = 65536) => ({ key, tenant: TENANT, region, capacity, modRevision: '7' });

describe('heat and the move decision', () => {
  it('turns access counts into decayed rates; a reused id or a vanished region starts over', () => {
    const meter = new HeatMeter(1000);
    const at = (accesses: number, region = 0x10001, tenant = TENANT) => [{ region, capacity: 4096, tenant, accesses, move: 'none' as const }];
    meter.sample(at(0), 0);
    expect(meter.load()).toBe(0);
    // 1000 accesses a second for one half-life: half way from 0 to 1000.
    meter.sample(at(1000), 1000);
    expect(meter.load()).toBeCloseTo(500, 6);
    meter.sample(at(2000), 2000);
    expect(meter.load()).toBeCloseTo(750, 6);
    expect(meter.hot()).toEqual([{ region: 0x10001, rate: 750 }]);
    // Idle: it decays by half every half-life.
    meter.sample(at(2000), 3000);
    expect(meter.load()).toBeCloseTo(375, 6);
    // A lower count is a new region under a reused id, another tenant too: they start at 0.
    meter.sample(at(5), 4000);
    expect(meter.load()).toBe(0);
    meter.sample(at(10, 0x10001, 'other'), 5000);
    expect(meter.load()).toBe(0);
    meter.sample([], 6000);
    expect(meter.rates()).toEqual([]);
    // Frozen or sealed regions are never listed as hot (they are being moved).
    meter.sample([{ region: 0x10002, capacity: 4096, tenant: TENANT, accesses: 0, move: 'frozen' }], 7000);
    meter.sample([{ region: 0x10002, capacity: 4096, tenant: TENANT, accesses: 900, move: 'frozen' }], 8000);
    expect(meter.load()).toBeGreaterThan(0);
    expect(meter.hot()).toEqual([]);
    // A sealed one's traffic has gone to its copy: it no longer counts in the load.
    meter.sample([{ region: 0x10002, capacity: 4096, tenant: TENANT, accesses: 900, move: 'sealed' }], 8001);
    expect(meter.load()).toBe(0);
    expect(serverLoad([1, 2, 3.5])).toBe(6.5);
    expect(serverLoad([1, 2, 3.5], 2)).toBe(6.5 + 2 * TIER_MISS_WEIGHT);
  });

  it("counts a tiered server's SSD misses in its load", () => {
    const accesses = (n: number): RegionAccesses[] => [{ region: 0x10001, capacity: 4096, tenant: TENANT, accesses: n, move: 'none' }];
    const plain = new HeatMeter(1000);
    const tiered = new HeatMeter(1000);
    for (let t = 0; t <= 10; t++) {
      plain.sample(accesses(100 * t), t * 1000);
      tiered.sample(accesses(100 * t), t * 1000, 30 * t);  // 30 of every 100 accesses missed
    }
    // Same accesses; the tiered meter adds 10 per miss per second: ~100 + 300 against ~100.
    expect(plain.load()).toBeGreaterThan(90);
    expect(plain.load()).toBeLessThan(101);
    expect(tiered.load() - plain.load()).toBeGreaterThan(0.9 * 30 * TIER_MISS_WEIGHT);
    expect(tiered.load() - plain.load()).toBeLessThan(30 * TIER_MISS_WEIGHT + 1);
    // A counter that went back (a restart) restarts the rate rather than going negative.
    tiered.sample(accesses(1100), 11_000, 5);
    expect(tiered.load()).toBeGreaterThan(0);
  });

  it('moves the hottest named region of the hottest server to the coldest, only above the ratio', () => {
    const hot = member(1, 300, [[0x10001, 200], [0x10002, 100]]);
    const cold = member(2, 10);
    const yes = decideMove([hot, cold], [named(0x10001), named(0x10002)], 2, new Set());
    expect(yes).toMatchObject({ move: true, from: { serverId: 1 }, to: { serverId: 2 }, region: { region: 0x10001 }, rate: 200 });
    // Below the ratio (300 ≤ 2 × 160), or a pool without two measured servers: no move.
    expect(decideMove([hot, member(2, 160)], [named(0x10001)], 2, new Set()).move).toBe(false);
    expect(decideMove([hot, member(2, undefined)], [named(0x10001)], 2, new Set()).move).toBe(false);
    expect(decideMove([member(1, 0.5, [[0x10001, 0.5]]), member(2, 0)], [named(0x10001)], 2, new Set()).move).toBe(false);
    // An unnamed hot region is skipped for the next one; a cooling one too; one too big for the target too.
    expect(decideMove([hot, cold], [named(0x10002)], 2, new Set())).toMatchObject({ move: true, region: { region: 0x10002 } });
    expect(decideMove([hot, cold], [named(0x10001), named(0x10002)], 2, new Set([named(0x10001).key]))).toMatchObject({ region: { region: 0x10002 } });
    expect(decideMove([hot, member(2, 10, [], 1000)], [named(0x10001), named(0x10002)], 2, new Set()).move).toBe(false);
    // Records written before the last move ended still count its region where it was: no move yet.
    expect(decideMove([hot, cold], [named(0x10001)], 2, new Set(), 2)).toMatchObject({ move: false, why: /predates the last move/ });
    expect(decideMove([hot, cold], [named(0x10001)], 2, new Set(), 1).move).toBe(true);
    // A region carrying the whole gap would only swap the servers' roles: not moved.
    expect(decideMove([member(1, 200, [[0x10001, 200]]), member(2, 0)], [named(0x10001)], 2, new Set()).move).toBe(false);
  });

  it('refuses bad heat in a membership record, naming the field', () => {
    const key = memberKey('/p', 1);
    const base = { v: 1, serverId: 1, address: '127.0.0.1:7401', capacityBytes: 10, freeBytes: 5, harvestableBytes: 0, startedMs: 1, updatedMs: 2 };
    expect(parseMemberRecord('/p', key, JSON.stringify({ ...base, load: 12.5, hot: [{ region: 0x10003, rate: 12.5 }] }))).toMatchObject({ load: 12.5, hot: [{ region: 0x10003, rate: 12.5 }] });
    expect(parseMemberRecord('/p', key, JSON.stringify(base)).load).toBeUndefined();
    for (const [extra, why] of [
      [{ load: -1, hot: [] }, /load must be/],
      [{ load: 'high', hot: [] }, /load must be/],
      [{ load: 1e13, hot: [] }, /load must be/],
      [{ load: 1 }, /hot must be a list/],
      [{ hot: [] }, /load must be/],
      [{ load: 1, hot: Array.from({ length: 9 }, (_, i) => ({ region: 0x10001 + i, rate: 1 })) }, /at most 8/],
      [{ load: 1, hot: [{ region: 0x20001, rate: 1 }] }, /region id of server 1/],
      [{ load: 1, hot: [{ region: 0x10000 + 0.5, rate: 1 }] }, /region id of server 1/],
      [{ load: 1, hot: [{ region: 0x10001, rate: null }] }, /hot\[0\]\.rate must be/],
      [{ load: 1, hot: [7] }, /hot\[0\] is not an object/],
    ] as const) {
      expect(() => parseMemberRecord('/p', key, JSON.stringify({ ...base, ...extra }))).toThrow(why);
    }
  });

  it('refuses migrate flags that cannot apply, and bad values (exit 2 from the CLI)', async () => {
    const parse = (...args: string[]) => () => parseMemServerCommand(['--token', 't', ...args], {});
    expect(parse('--migrate', 'on')).toThrow(/--migrate needs --etcd/);
    expect(parse('--migrate-ratio', '3')).toThrow(/--migrate-ratio needs --migrate on/);
    expect(parse('--etcd', 'http://127.0.0.1:1', '--migrate-interval', '500')).toThrow(/--migrate-interval needs --migrate on/);
    expect(parse('--etcd', 'http://127.0.0.1:1', '--migrate', 'on', '--migrate-ratio', '0.5')).toThrow(UsageError);
    expect(parse('--etcd', 'http://127.0.0.1:1', '--migrate', 'on', '--migrate-interval', '10')).toThrow(UsageError);
    expect(parse('--etcd', 'http://127.0.0.1:1', '--migrate', 'maybe')).toThrow(/on or off/);
    const ok = parseMemServerCommand(['--token', 't', '--etcd', 'http://127.0.0.1:1', '--migrate', 'on', '--migrate-ratio', '1.5'], {});
    expect(ok.kind === 'run' && ok.options.pool?.migrate).toEqual({ intervalMs: 10_000, ratio: 1.5, graceS: 30 });
    const child = spawn(process.execPath, [MEMSERVER_CLI, '--token', 't', '--migrate', 'on'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    expect(code).toBe(2);
    expect(stderr).toMatch(/--migrate needs --etcd/);
  });

  it("the migrator's client: a tenant's credential admits it; bad tokens, addresses and sizes are refused", async () => {
    const { server } = await startServer({});
    const address = `127.0.0.1:${server.port}`;
    const client = new addon.TransportClient();
    await expect(client.request(constants.OP_READ, 1, 0, 1)).rejects.toMatchObject({ code: 'PD3_E_CLOSED' });
    await expect(client.connect(address, credential('other'), TENANT, 2000)).rejects.toMatchObject({ code: 'PD3_E_AUTH' });
    await expect(client.connect('not an address', '', TENANT, 2000)).rejects.toMatchObject({ code: 'PD3_E_INVAL' });
    await expect(client.connect(address, credential(TENANT), 'bad tenant', 2000)).rejects.toMatchObject({ code: 'PD3_E_INVAL' });
    expect(() => client.connect(address, '', TENANT, 0)).toThrow(/timeoutMs/);
    await client.connect(address, credential(TENANT), TENANT, 2000);
    const alloc = await client.request(constants.OP_CONTROL, constants.CTL_ALLOCATE, 0, 8192);
    expect(alloc.status).toBe(0);
    const region = alloc.data.readUInt32LE(constants.ALLOC_REPLY_REGION);
    expect(() => client.request(constants.OP_WRITE, region, 0, 4, Buffer.from('abc'))).toThrow(/size/);
    expect(() => client.request(constants.OP_PREFETCH, 0, 0, 1)).toThrow(/READ, WRITE or CONTROL/);
    const pending = client.request(constants.OP_WRITE, region, 0, 4, Buffer.from('abcd'));
    expect(() => client.request(constants.OP_READ, region, 0, 4)).toThrow(/one call at a time/);
    expect((await pending).status).toBe(0);
    expect((await client.request(constants.OP_READ, region, 0, 4)).data.toString()).toBe('abcd');
    // Move controls of the server answer with statuses; a frozen region refuses writes.
    expect((await client.request(constants.OP_CONTROL, constants.CTL_SEAL, region, 0)).status).toBe(constants.status.PD3_E_INVAL);
    expect((await client.request(constants.OP_CONTROL, constants.CTL_FREEZE, region, 0)).status).toBe(0);
    expect((await client.request(constants.OP_WRITE, region, 0, 4, Buffer.from('lost'))).status).toBe(constants.status.PD3_E_MOVED);
    // Counters are published after the server's loop pass, which may end after our answer.
    await waitUntil(() => server.stats().moved_refusals >= 1, 2000, 'the refusal counted');
    expect(server.stats().moved_refusals).toBe(1);
    await expect(client.request(constants.OP_READ, region, 0, client.maxPayload() + 1)).rejects.toMatchObject({ code: 'PD3_E_TOO_BIG' });
    client.close();
    expect(client.connected()).toBe(false);
  });
});

const ETCD = findEtcd('hot-region migration between memory servers');

describe.skipIf(ETCD === null)('hot-region migration through etcd', () => {
  const shared = sharedEtcd(ETCD!, 'm', 30_000);
  const { freshPrefix } = shared;

  const pool = (prefix: string, extra: Record<string, unknown> = {}) => ({ etcd: shared.etcd.url, etcdPrefix: prefix, leaseTtl: 2, ...extra });
  const leader = (prefix: string) => pool(prefix, { migrate: true, migrateInterval: 300, migrateRatio: 2, migrateGrace: 2 });
  const session = async (prefix: string): Promise<TenantSession> => {
    const s = await TenantSession.open({ endpoints: [shared.etcd.url], prefix, tenant: TENANT, leaseTtlS: 2 });
    cleanup.push(() => s.close());
    return s;
  };

  /** A client writing distinct values to 32 slots of `name` and reading slots back, through
   *  session.follow(): every read must give the last value acknowledged for its slot. */
  function modelClient(s: TenantSession, host: Pd3Host, name: string, pauseMs = 0) {
    const model = new Map<number, string>();
    let ops = 0;
    let stop = false;
    const slot = (i: number) => (i % 32) * 256;
    const run = (async () => {
      for (let i = 0; !stop; i++) {
        const value = `${name}:${i}`.padEnd(64, '.');
        await s.follow(name, (region) => host.write(region, slot(i), Buffer.from(value)));
        model.set(slot(i), value); // acknowledged
        const probe = slot(i * 7 + 3);
        const got = await s.follow(name, (region) => host.read(region, probe, 64));
        expect(got.toString()).toBe(model.get(probe) ?? '\0'.repeat(64));
        ops += 2;
        if (pauseMs > 0) await sleep(pauseMs);
      }
    })();
    return { model, ops: () => ops, stop: async () => { stop = true; await run; } };
  }

  async function checkModel(host: Pd3Host, region: number, model: Map<number, string>): Promise<void> {
    for (const [offset, value] of model) expect((await host.read(region, offset, 64)).toString()).toBe(value);
  }

  it('the leader moves a hot named region from a loaded server to an idle one; a client loses nothing through it', async () => {
    const prefix = freshPrefix();
    const a = await startServer({ serverId: 1, ...leader(prefix) });
    const b = await startServer({ serverId: 2, capacity: '32M', ...pool(prefix) });
    const host = directHost([a.server, b.server]);
    const s = await session(prefix);
    const hot = await s.openRegion(host, 'hot', 65536);
    const warm = await s.openRegion(host, 'warm', 65536);
    expect([hot.region >>> 16, warm.region >>> 16]).toEqual([1, 1]); // both on the roomier server 1
    const busy = modelClient(s, host, 'hot');
    const idle = modelClient(s, host, 'warm', 10); // the warm region: a fraction of the hot one's traffic
    await waitUntil(() => a.server.migrator!.done === 1, 15_000, 'a move done');
    await sleep(1500); // more traffic on the moved region, and checks that must not move anything else
    await busy.stop();
    await idle.stop();
    expect(busy.ops()).toBeGreaterThan(100);
    const now = await s.resolveRegion('hot');
    expect(now!.region >>> 16).toBe(2); // the copy on the idle server
    expect(now!.capacity).toBe(hot.capacity);
    expect((await s.resolveRegion('warm'))!.region).toBe(warm.region);
    await checkModel(host, now!.region, busy.model);
    await checkModel(host, warm.region, idle.model);
    // The source answers PD3_E_MOVED until its grace ends, then it is freed.
    expect(await codeOf(host.read(hot.region, 0, 8))).toBe('PD3_E_MOVED');
    expect(await codeOf(host.write(hot.region, 0, Buffer.from('late')))).toBe('PD3_E_MOVED');
    await waitUntil(() => a.lines.some((l) => l.includes('migrate.freed')), 5000, 'the source freed');
    expect(await codeOf(host.read(hot.region, 0, 8))).toBe('PD3_E_BAD_REGION');
    const m = a.server.migrator!;
    expect([m.started, m.done, m.aborted, m.unresolved, m.movedBytes]).toEqual([1, 1, 0, 0, hot.capacity]);
    expect(a.lines.some((l) => l.includes('migrate.started'))).toBe(true);
    expect(a.server.migrator!.isLeader).toBe(true);
    const text = await shared.kv.get(regionNameKey(prefix, TENANT, 'hot')).string();
    expect(JSON.parse(text!).region).toBe(now!.region);
  }, 40_000);

  it('has one leader among the servers started with --migrate on; another takes over when it leaves', async () => {
    const prefix = freshPrefix();
    const a = await startServer({ serverId: 1, ...leader(prefix) });
    const b = await startServer({ serverId: 2, ...leader(prefix) });
    const leaders = () => [a, b].filter((x) => x.server.migrator!.isLeader);
    await waitUntil(() => leaders().length === 1, 5000, 'one leader');
    await sleep(1000); // several checks: still exactly one
    expect(leaders()).toHaveLength(1);
    const [first] = leaders();
    const other = first === a ? b : a;
    await first!.server.close();
    await waitUntil(() => other.server.migrator!.isLeader, 5000, 'the other server leads');
    const holder = JSON.parse((await shared.kv.get(`${prefix}/migrator/leader`).string())!);
    expect(holder.serverId).toBe(other === a ? 1 : 2);
  }, 20_000);

  it('does not move below the ratio', async () => {
    const prefix = freshPrefix();
    const a = await startServer({ serverId: 1, ...leader(prefix) });
    const b = await startServer({ serverId: 2, ...pool(prefix) });
    const s = await session(prefix);
    const [hostA, hostB] = [directHost([a.server]), directHost([b.server])];
    await s.openRegion(hostA, 'one', 65536);
    await s.openRegion(hostB, 'two', 65536);
    const one = modelClient(s, hostA, 'one');
    const two = modelClient(s, hostB, 'two');
    // Both servers get the same traffic (one client alternating): loads within 2× of each other.
    await waitUntil(async () => {
      const loads = await Promise.all([1, 2].map(async (id) => parseMemberRecord(prefix, memberKey(prefix, id), (await shared.kv.get(memberKey(prefix, id)).string())!).load ?? 0));
      return loads.every((l) => l > 20);
    }, 10_000, 'both servers loaded');
    await sleep(2000); // several checks
    await one.stop();
    await two.stop();
    expect(a.server.migrator!.isLeader).toBe(true);
    expect(a.server.migrator!.checks).toBeGreaterThan(5);
    expect(a.server.migrator!.started).toBe(0);
  }, 30_000);

  it('gives a move up when its target stops answering: the source serves again, nothing is lost', async () => {
    const prefix = freshPrefix();
    const a = await startServer({ serverId: 1, ...leader(prefix) });
    // The target: a process that will be frozen (its record outlives it by its 10 s lease), then killed.
    const target = spawnServer(['--server-id', '2', '--etcd', shared.etcd.url, '--etcd-prefix', prefix, '--lease-ttl', '10']);
    await waitUntil(async () => (await shared.kv.get(memberKey(prefix, 2)).string()) !== null, 10_000, 'the target registered');
    const host = directHost([a.server]);
    const s = await session(prefix);
    const hot = await s.openRegion(host, 'hot', 65536);
    await s.openRegion(host, 'warm', 65536);
    target.kill('SIGSTOP');
    const busy = modelClient(s, host, 'hot');
    const idle = modelClient(s, host, 'warm');
    await waitUntil(() => a.server.migrator!.aborted === 1, 15_000, 'a move aborted');
    await sleep(300); // the thawed source takes writes again
    const opsAfterAbort = busy.ops();
    await sleep(300);
    target.kill('SIGKILL');
    await a.server.migrator!.close(); // no further move under way when the states are read
    await busy.stop();
    await idle.stop();
    expect(busy.ops()).toBeGreaterThan(opsAfterAbort);
    // Every move tried (the hot region, then maybe the warm one) was given up; none half-done.
    const m = a.server.migrator!;
    expect(m.started).toBeGreaterThanOrEqual(1);
    expect([m.done, m.aborted, m.unresolved]).toEqual([0, m.started, 0]);
    const aborted = a.lines.find((l) => l.includes('migrate.aborted'))!;
    expect(aborted).toMatch(/failed at allocate/);
    expect((await s.resolveRegion('hot'))!.region).toBe(hot.region);
    await checkModel(host, hot.region, busy.model);
    await waitUntil(() => a.server.regionHeat().every((r) => r.move === 'none'), 1000, 'every region served as usual');
  }, 40_000);

  it('gives a move up when its target is killed during the copy: the source serves again, nothing is lost', async () => {
    const prefix = freshPrefix();
    const metrics = `127.0.0.1:${await freePort()}`;
    const target = spawnServer(['--server-id', '2', '--capacity', '256M', '--metrics', metrics, '--etcd', shared.etcd.url, '--etcd-prefix', prefix, '--lease-ttl', '10']);
    // Killed as soon as the copy's region appears on it: a 128 MiB region takes eight frame-sized
    // pieces to copy, so the kill lands in the copy (or, on a slow poll, just before it).
    const lines: string[] = [];
    const logger = new Logger('memserver', 'info', (l) => lines.push(l));
    let killed = false;
    const watch = setInterval(() => {
      httpGet(metrics, '/metrics', 1000).then((text) => {
        if (!killed && /^pd3_memserver_regions [1-9]/m.test(text)) {
          killed = true;
          target.kill('SIGKILL');
        }
      }, () => {});
    }, 2);
    cleanup.push(() => clearInterval(watch));
    const options = memServerOptions({ listen: '127.0.0.1:0', token: SECRET, metrics: 'off', capacity: '512M', serverId: 1, ...leader(prefix) }, {});
    const server = await MemServer.start(options, logger);
    cleanup.push(() => server.close());
    await waitUntil(async () => (await shared.kv.get(memberKey(prefix, 2)).string()) !== null, 10_000, 'the target registered');
    const host = directHost([server]);
    const s = await session(prefix);
    const big = await s.openRegion(host, 'big', 128 << 20);
    await s.openRegion(host, 'warm', 65536);
    const tail = Buffer.alloc(4096, 7);
    await host.write(big.region, (128 << 20) - 4096, tail); // bytes at the far end, past the first piece
    const busy = modelClient(s, host, 'big');
    const idle = modelClient(s, host, 'warm', 10);
    await waitUntil(() => server.migrator!.aborted >= 1, 15_000, 'a move aborted');
    await server.migrator!.close();
    await busy.stop();
    await idle.stop();
    const m = server.migrator!;
    expect([m.done, m.aborted, m.unresolved]).toEqual([0, m.started, 0]);
    const aborted = lines.find((l) => l.includes('migrate.aborted'))!;
    expect(aborted).toMatch(/failed at (allocate|copy)/); // after the freeze: the thaw was needed
    expect((await s.resolveRegion('big'))!.region).toBe(big.region);
    await checkModel(host, big.region, busy.model);
    expect((await host.read(big.region, (128 << 20) - 4096, 4096)).equals(tail)).toBe(true);
    expect(killed).toBe(true);
    await waitUntil(() => server.regionHeat().every((r) => r.move === 'none'), 1000, 'every region served as usual');
  }, 40_000);

  it("a server settles moves its migrator abandoned: frozen and unswitched ones thawed, switched ones freed", async () => {
    const prefix = freshPrefix();
    const a = await startServer({ serverId: 1, ...pool(prefix) });
    const host = directHost([a.server]);
    const s = await session(prefix);
    const regions = await Promise.all(['frozen', 'unswitched', 'switched'].map((n) => s.openRegion(host, n, 8192)));
    for (const r of regions) await host.write(r.region, 0, Buffer.from(`data of ${r.region}`));
    const [frozen, unswitched, switched] = regions.map((r) => r.region) as [number, number, number];
    // A mover that died: one region frozen, two sealed; one of those had its name switched away.
    const mover = new addon.TransportClient();
    await mover.connect(`127.0.0.1:${a.server.port}`, credential(TENANT), TENANT, 2000);
    for (const r of [frozen, unswitched, switched]) expect((await mover.request(constants.OP_CONTROL, constants.CTL_FREEZE, r, 0)).status).toBe(0);
    for (const r of [unswitched, switched]) expect((await mover.request(constants.OP_CONTROL, constants.CTL_SEAL, r, 0)).status).toBe(0);
    mover.close();
    await shared.kv.put(regionNameKey(prefix, TENANT, 'switched')).value(encodeRegionNameRecord({ region: 0x20001, capacity: 8192 }));
    const before = (await shared.kv.get(regionNameKey(prefix, TENANT, 'unswitched')).exec()).kvs[0]!.mod_revision;
    await waitUntil(() => a.server.regionHeat().filter((r) => r.move !== 'none').length === 3, 2000, 'the moves seen');
    const janitor = a.server.janitor!;
    const t0 = Date.now() + 10_000_000; // a clock of its own, far from the background passes'
    await janitor.check(t0);
    expect([janitor.thawed, janitor.freed]).toEqual([0, 0]); // not stuck yet
    await janitor.check(t0 + STUCK_MOVE_MS);
    expect([janitor.thawed, janitor.freed]).toEqual([2, 1]);
    expect((await host.read(frozen, 0, 20)).toString()).toBe(`data of ${frozen}`.padEnd(20, '\0'));
    expect((await host.read(unswitched, 0, 20)).toString()).toBe(`data of ${unswitched}`.padEnd(20, '\0'));
    await host.write(unswitched, 0, Buffer.from('writable again'));
    expect(await codeOf(host.read(switched, 0, 8))).toBe('PD3_E_BAD_REGION');
    // The unswitched name was fenced (rewritten unchanged): a late switch comparing the old revision fails.
    const after = (await shared.kv.get(regionNameKey(prefix, TENANT, 'unswitched')).exec()).kvs[0]!;
    expect(after.mod_revision).not.toBe(before);
    expect(JSON.parse(after.value.toString()).region).toBe(unswitched);
    expect(a.lines.filter((l) => l.includes('migrate.stuck_thawed'))).toHaveLength(2);
    expect(a.lines.some((l) => l.includes('migrate.stuck_freed'))).toBe(true);
  }, 20_000);
});

/** pd3-memserver as a child process (token SECRET, port picked by the kernel), killed at cleanup. */
function spawnServer(args: string[]): ChildProcess {
  const defaults = [['--capacity', '32M'], ['--metrics', 'off']].filter(([flag]) => !args.includes(flag!)).flat() as string[];
  const child = spawn(process.execPath, [MEMSERVER_CLI, '--listen', '127.0.0.1:0', '--token', SECRET, ...defaults, ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  createInterface({ input: child.stderr! }).on('line', () => {});
  cleanup.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return child;
}
