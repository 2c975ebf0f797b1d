// A direct-mode host following the pool's membership in etcd (PoolServers, pd3_host_set_direct_member),
// against a real etcd and in-process memory servers on loopback: a server that registers later gets
// new regions, one whose record goes gets none while its regions are still served, one that comes
// back is placed again, an etcd outage is served through and caught up with, and bad input is
// refused. Membership records are written by the test, so each change happens when it says.
import { afterEach, describe, expect, it } from 'vitest';
import { Logger } from '../dist/cli/logger.js';
import { encodeMemberRecord, MEMBER_RECORD_VERSION, memberKey } from '../dist/common/pool-record.js';
import { constants, Pd3Host, PoolServers } from '../dist/host/index.js';
import { MemServer, memServerOptions } from '../dist/memserver/index.js';
import { uniqueName } from './helpers.js';
import { waitUntil } from './integration-helpers.js';
import { EtcdServer, findEtcd, sharedEtcd } from './etcd-server.js';

const ETCD = findEtcd('a direct-mode host following the pool in etcd');
const TOKEN = 'pool-follow-token';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  while (cleanup.length > 0) await cleanup.pop()!();
});

/** An in-process memory server of `mib` MiB with no etcd of its own: the test writes its record. */
async function server(serverId: number, mib: number): Promise<MemServer> {
  const s = await MemServer.start(
    memServerOptions({ listen: '127.0.0.1:0', token: TOKEN, metrics: 'off', capacity: `${mib}M`, serverId }, {}),
    new Logger('memserver', 'error', () => {}));
  cleanup.push(() => s.close());
  return s;
}

/** The membership record of `s`, server `serverId` of `mib` MiB. */
function record(s: MemServer, serverId: number, mib: number): string {
  const now = Date.now();
  const bytes = mib << 20;
  return encodeMemberRecord({ v: MEMBER_RECORD_VERSION, serverId, address: `127.0.0.1:${s.port}`, capacityBytes: bytes,
    freeBytes: bytes, harvestableBytes: bytes, startedMs: now, updatedMs: now });
}

/** The server ids of `n` new 4 KiB regions. */
async function place(host: Pd3Host, n: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) ids.push((await host.allocate(4096)).region >>> constants.REGION_LOCAL_BITS);
  return ids;
}

describe.skipIf(ETCD === null)('a direct-mode host following the pool', () => {
  const shared = sharedEtcd(ETCD!, 'hpf');

  it('places on servers that join, not on those that left, again on those that return', async () => {
    const prefix = shared.freshPrefix();
    const a = await server(3, 64);
    const b = await server(9, 256);
    await shared.kv.put(memberKey(prefix, 3)).value(record(a, 3, 64));
    const lines: string[] = [];
    const pool = await PoolServers.open({ endpoints: [shared.etcd.url], prefix, logger: new Logger('host', 'debug', (l) => lines.push(l)) });
    cleanup.push(() => pool.close());
    expect(pool.addresses).toEqual([`127.0.0.1:${a.port}`]);
    const host = Pd3Host.create({ name: uniqueName('pool-follow'), directOnly: true, directServers: pool.addresses,
      directToken: TOKEN, directPlacement: 'most-free' });
    cleanup.push(() => host.close());
    pool.follow(host);
    expect(new Set(await place(host, 4))).toEqual(new Set([3]));

    // B registers: the freer, so new regions go there.
    await shared.kv.put(memberKey(prefix, 9)).value(record(b, 9, 256));
    await waitUntil(() => pool.stats().joined === 1, 5000, 'B seen joining');
    const onB = await host.allocate(4096);
    expect(onB.region >>> constants.REGION_LOCAL_BITS).toBe(9);
    await host.write(onB.region, 0, Buffer.from('kept on b'));

    // B's record goes (its lease ended): no new region there, its region still served.
    await shared.kv.delete().key(memberKey(prefix, 9));
    await waitUntil(() => pool.stats().left === 1, 5000, 'B seen leaving');
    expect(new Set(await place(host, 6))).toEqual(new Set([3]));
    expect((await host.read(onB.region, 0, 9)).toString()).toBe('kept on b');

    // B back: placed again.
    await shared.kv.put(memberKey(prefix, 9)).value(record(b, 9, 256));
    await waitUntil(() => pool.stats().returned === 1, 5000, 'B seen returning');
    expect((await host.allocate(4096)).region >>> constants.REGION_LOCAL_BITS).toBe(9);
    expect(pool.stats()).toMatchObject({ members: 2, etcdUp: true, left: 1, joined: 1, returned: 1, applyFailures: 0 });
    const events = lines.map((l) => (JSON.parse(l) as { event: string }).event);
    expect(events).toEqual(expect.arrayContaining(['pool.members', 'pool.member_seen', 'pool.member_left', 'pool.member_returned']));

    // A host created on a server outside the pool learns the members listed when it starts following.
    const c = await server(11, 512);
    const late = Pd3Host.create({ name: uniqueName('pool-late'), directOnly: true, directServers: [`127.0.0.1:${c.port}`],
      directToken: TOKEN, directPlacement: 'most-free' });
    cleanup.push(() => late.close());
    const pool2 = await PoolServers.open({ endpoints: [shared.etcd.url], prefix });
    cleanup.push(() => pool2.close());
    pool2.follow(late);
    late.setDirectMember(`127.0.0.1:${c.port}`, false);
    expect((await late.allocate(4096)).region >>> constants.REGION_LOCAL_BITS).toBe(9);
  }, 30_000);

  it('serves through an etcd outage with the last membership, and catches up when etcd is back', async () => {
    // Its own etcd, since this test stops it.
    const own = await EtcdServer.create(ETCD!);
    cleanup.push(() => own.close());
    await own.start();
    const { Etcd3 } = await import('etcd3');
    const kv = new Etcd3({ hosts: own.url });
    cleanup.push(() => kv.close());
    const prefix = '/follow-outage';
    const a = await server(4, 64);
    const b = await server(5, 256);
    await kv.put(memberKey(prefix, 4)).value(record(a, 4, 64));
    const pool = await PoolServers.open({ endpoints: [own.url], prefix });
    cleanup.push(() => pool.close());
    const host = Pd3Host.create({ name: uniqueName('pool-outage'), directOnly: true, directServers: pool.addresses,
      directToken: TOKEN, directPlacement: 'most-free' });
    cleanup.push(() => host.close());
    pool.follow(host);

    await own.kill();
    await waitUntil(() => !pool.stats().etcdUp, 10_000, 'the outage noticed');
    expect(new Set(await place(host, 3))).toEqual(new Set([4]));  // the data path goes on
    // B registers as etcd comes back: the list after the outage, or the watch after it, brings it in.
    await own.start();
    await kv.put(memberKey(prefix, 5)).value(record(b, 5, 256));
    await waitUntil(() => pool.stats().etcdUp && pool.stats().members === 2, 15_000, 'caught up');
    expect(pool.stats().outages).toBe(1);
    expect((await host.allocate(4096)).region >>> constants.REGION_LOCAL_BITS).toBe(5);
  }, 60_000);

  it('refuses an empty pool', async () => {
    await expect(PoolServers.open({ endpoints: [shared.etcd.url], prefix: shared.freshPrefix() })).rejects.toThrow(/no memory server is registered/);
  });
});

// Without etcd: what needs none.
describe('a direct-mode host told of members by hand', () => {
  it('refuses bad input with clear errors', async () => {
    await expect(PoolServers.open({ endpoints: ['http://127.0.0.1:1'], prefix: '/nowhere' })).rejects.toThrow(/cannot read the pool/);
    const a = await server(6, 64);
    const host = Pd3Host.create({ name: uniqueName('pool-bad'), directOnly: true, directServers: [`127.0.0.1:${a.port}`], directToken: TOKEN,
      directPlacement: 'most-free' });
    cleanup.push(() => host.close());
    expect(() => host.setDirectMember('not an address', true)).toThrow(expect.objectContaining({ code: 'PD3_E_INVAL' }));
    expect(() => host.setDirectMember('127.0.0.1:0', true)).toThrow(/not host:port/);
    const plain = Pd3Host.create({ name: uniqueName('pool-plain') });
    cleanup.push(() => plain.close());
    expect(() => plain.setDirectMember(`127.0.0.1:${a.port}`, true)).toThrow(/no direct mode/);
    // A member told by hand is placed: the data path needs no etcd.
    const b = await server(7, 256);
    host.setDirectMember(`127.0.0.1:${b.port}`, true);
    expect((await host.allocate(4096)).region >>> constants.REGION_LOCAL_BITS).toBe(7);
    host.close();
    expect(() => host.setDirectMember(`127.0.0.1:${b.port}`, false)).toThrow(expect.objectContaining({ code: 'PD3_E_CLOSED' }));
  }, 20_000);
});
