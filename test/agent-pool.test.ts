// pd3-agent --etcd following the pool's membership at run time, with real processes on loopback
// and a real etcd: a member killed with -9 leaves placement within one TTL of its death; a frozen
// member stops getting regions once its record expires, keeps its regions, and is placed again
// when it is back; a server that registers later is connected to and placed; an etcd outage is
// served through, logged and counted once, and caught up with when etcd is back, also when members
// left and joined while only the agent was cut off from etcd.
import { connect, createServer, type Server as NetServer, type Socket } from 'node:net';
import { afterEach, beforeAll, afterAll, describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { constants as C, type Pd3Host } from '../dist/host/index.js';
import { memberKey } from '../dist/common/pool-record.js';
import { AGENT_CLI, startDaemon, type Daemon } from '../dist/examples/harness/processes.js';
import { firstLoggedAt, httpGet, logEvents, metric, Rig, sleep, waitUntil } from './integration-helpers.js';
import { EtcdServer, findEtcd, freePort } from './etcd-server.js';

const ETCD = findEtcd('pd3-agent following the pool in etcd');
const TOKEN = 't';
const TTL_S = 2;
/** Slack on "within one TTL": etcd checks lease expiry every 500 ms; the watch and the engine add
 *  a few ms. */
const SLACK_MS = 700;

type Server = Daemon & { port: number };
type PoolAgent = Daemon & { metrics: string };

/** The value of `name{server="ADDRESS"}` in the agent's scrape. */
async function perServer(agent: PoolAgent, name: string, address: string): Promise<number> {
  const text = await httpGet(agent.metrics, '/metrics');
  const prefix = `${name}{server="${address}"} `;
  const line = text.split('\n').find((l) => l.startsWith(prefix));
  if (line === undefined) throw new Error(`${prefix}not in the scrape`);
  return Number(line.slice(prefix.length));
}

/** A TCP relay on loopback to `target`'s port, to cut one process off from etcd while etcd and
 *  everyone else go on: cut() drops every connection and stops accepting, restore() listens again
 *  on the same port. */
class Relay {
  private server: NetServer | null = null;
  private readonly sockets = new Set<Socket>();

  private constructor(
    readonly port: number,
    private readonly target: number,
  ) {}

  static async open(target: string): Promise<Relay> {
    const relay = new Relay(await freePort(), Number(new URL(target).port));
    await relay.restore();
    return relay;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async restore(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.target, '127.0.0.1');
      for (const [s, other] of [[client, upstream], [upstream, client]] as const) {
        this.sockets.add(s);
        s.on('error', () => {});
        s.on('close', () => {
          this.sockets.delete(s);
          other.destroy();
        });
        s.pipe(other);
      }
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.server = server;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    if (server !== null) await new Promise<void>((r) => server.close(() => r()));
  }
}

/** The server ids of `n` new regions of 4 KiB. */
async function place(host: Pd3Host, n: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) ids.push((await host.allocate(4096)).region >>> C.REGION_LOCAL_BITS);
  return ids;
}

describe.skipIf(ETCD === null)('pd3-agent following the pool in etcd', () => {
  let etcd: EtcdServer;
  let rig: Rig;
  let prefixCount = 0;
  const freshPrefix = (): string => `/a${process.pid}-${prefixCount++}`;

  beforeAll(async () => {
    etcd = await EtcdServer.create(ETCD!);
    await etcd.start();
  }, 20_000);
  afterAll(async () => {
    await etcd?.close();
  });
  afterEach(async () => {
    await rig?.teardown();
  });

  /** A pd3-memserver registered in the pool under `prefix` with a 2 s lease. */
  const member = (url: string, prefix: string, serverId: number, capacity = '64M'): Promise<Server> =>
    rig.memserver({ token: TOKEN, serverId, capacity, extra: ['--etcd', url, '--etcd-prefix', prefix, '--lease-ttl', String(TTL_S)] });

  /** A pd3-agent serving `segment` from the pool under `prefix`, with its metrics endpoint. */
  async function poolAgent(url: string, prefix: string, segment: string): Promise<PoolAgent> {
    const d = await startDaemon(AGENT_CLI, ['--segment', segment, '--etcd', url, '--etcd-prefix', prefix,
      '--metrics', '127.0.0.1:0', '--log-level', 'debug'], TOKEN);
    rig.defer(() => d.stop(2000));
    return Object.assign(d, { metrics: String(d.ready.metrics) });
  }

  it('stops placing on a member killed with -9 within one TTL of its death', async () => {
    rig = new Rig();
    const prefix = freshPrefix();
    const servers = [await member(etcd.url, prefix, 1), await member(etcd.url, prefix, 2), await member(etcd.url, prefix, 3)];
    const host = rig.host('pool-kill');
    const agent = await poolAgent(etcd.url, prefix, host.name);
    await waitUntil(async () => (await metric(agent.metrics, 'pd3_agent_servers_up')) === 3, 5000, 'three servers up');
    expect(new Set(await place(host, 30))).toEqual(new Set([1, 2, 3]));

    const killedAt = Date.now();
    await servers[1]!.kill();
    await waitUntil(() => firstLoggedAt(agent, 'pool.member_left') !== null, TTL_S * 1000 + 3000, 'pool.member_left');
    const leftAfterMs = firstLoggedAt(agent, 'pool.member_left')! - killedAt;
    console.log(`kill -9 → pool.member_left after ${leftAfterMs} ms (lease TTL ${TTL_S} s)`);
    expect(leftAfterMs).toBeLessThanOrEqual(TTL_S * 1000 + SLACK_MS);
    const left = logEvents(agent, 'pool.member_left');
    expect(left).toHaveLength(1);
    expect(left[0]).toMatchObject({ level: 'warn', serverId: 2, address: `127.0.0.1:${servers[1]!.port}` });
    expect(await metric(agent.metrics, 'pd3_agent_pool_members_left_total')).toBe(1);
    expect(await metric(agent.metrics, 'pd3_agent_pool_members')).toBe(2);
    expect(await perServer(agent, 'pd3_agent_server_placeable', `127.0.0.1:${servers[1]!.port}`)).toBe(0);
    expect(await perServer(agent, 'pd3_agent_server_placeable', `127.0.0.1:${servers[0]!.port}`)).toBe(1);
    expect(new Set(await place(host, 30))).toEqual(new Set([1, 3]));

    // A SIGTERM revokes the lease first: the agent hears at once, not a TTL later.
    const stoppedAt = Date.now();
    await servers[2]!.stop(2000);
    await waitUntil(() => logEvents(agent, 'pool.member_left').length === 2, 2000, 'second pool.member_left');
    const stopLeftMs = Date.parse(String(logEvents(agent, 'pool.member_left')[1]!.ts)) - stoppedAt;
    console.log(`SIGTERM → pool.member_left after ${stopLeftMs} ms`);
    expect(logEvents(agent, 'pool.member_left')[1]).toMatchObject({ serverId: 3 });
    expect(stopLeftMs).toBeLessThan(1000);
    expect(new Set(await place(host, 10))).toEqual(new Set([1]));
  }, 30_000);

  it('stops placing on a frozen member once its record expires, still serves its regions, and places there again when it is back', async () => {
    rig = new Rig();
    const prefix = freshPrefix();
    const servers = [await member(etcd.url, prefix, 1), await member(etcd.url, prefix, 2)];
    const host = rig.host('pool-freeze');
    const agent = await poolAgent(etcd.url, prefix, host.name);
    await waitUntil(async () => (await metric(agent.metrics, 'pd3_agent_servers_up')) === 2, 5000, 'two servers up');
    // A region on server 2, with data.
    let region = -1;
    for (let i = 0; i < 50 && region < 0; i++) {
      const r = await host.allocate(4096);
      if (r.region >>> C.REGION_LOCAL_BITS === 2) region = r.region;
    }
    expect(region).toBeGreaterThanOrEqual(0);
    const data = Buffer.from('kept while out of the pool');
    await host.write(region, 0, data);

    // Frozen: its connection stays open and idle (the engine sees nothing wrong), its lease ends.
    const frozenAt = Date.now();
    servers[1]!.child.kill('SIGSTOP');
    rig.defer(() => servers[1]!.child.kill('SIGCONT'));
    await waitUntil(() => firstLoggedAt(agent, 'pool.member_left') !== null, TTL_S * 1000 + 3000, 'pool.member_left');
    const leftAfterMs = firstLoggedAt(agent, 'pool.member_left')! - frozenAt;
    console.log(`SIGSTOP → pool.member_left after ${leftAfterMs} ms (lease TTL ${TTL_S} s)`);
    expect(leftAfterMs).toBeLessThanOrEqual(TTL_S * 1000 + SLACK_MS);
    const address = `127.0.0.1:${servers[1]!.port}`;
    expect(await perServer(agent, 'pd3_agent_server_connected', address)).toBe(1);
    expect(await perServer(agent, 'pd3_agent_server_placeable', address)).toBe(0);
    // Every new region goes to server 1 (none waits on the frozen one).
    const t0 = Date.now();
    expect(new Set(await place(host, 20))).toEqual(new Set([1]));
    expect(Date.now() - t0).toBeLessThan(1000);

    // Thawed: it registers again under a new lease, its region was never moved, and it is placed again.
    const thawedAt = Date.now();
    servers[1]!.child.kill('SIGCONT');
    await waitUntil(() => firstLoggedAt(agent, 'pool.member_returned') !== null, 5000, 'pool.member_returned');
    console.log(`SIGCONT → pool.member_returned after ${firstLoggedAt(agent, 'pool.member_returned')! - thawedAt} ms`);
    expect(logEvents(agent, 'pool.member_returned')[0]).toMatchObject({ serverId: 2, address });
    expect((await host.read(region, 0, data.length)).equals(data)).toBe(true);
    await waitUntil(async () => (await perServer(agent, 'pd3_agent_server_placeable', address)) === 1, 2000, 'placeable again');
    expect(await metric(agent.metrics, 'pd3_agent_pool_members_returned_total')).toBe(1);
    expect(await metric(agent.metrics, 'pd3_agent_pool_members')).toBe(2);
    expect(await place(host, 30)).toContain(2);
  }, 30_000);

  it('connects to a server that registers after it started and places new regions there; skips a malformed record', async () => {
    rig = new Rig();
    const prefix = freshPrefix();
    await member(etcd.url, prefix, 1);
    await member(etcd.url, prefix, 2);
    const host = rig.host('pool-join');
    const agent = await poolAgent(etcd.url, prefix, host.name);
    await waitUntil(async () => (await metric(agent.metrics, 'pd3_agent_servers_up')) === 2, 5000, 'two servers up');
    expect(new Set(await place(host, 10))).toEqual(new Set([1, 2]));

    const startedAt = Date.now();
    const late = await member(etcd.url, prefix, 3, '256M');
    await waitUntil(() => firstLoggedAt(agent, 'pool.member_joined') !== null, 5000, 'pool.member_joined');
    console.log(`a 3rd server started → pool.member_joined after ${firstLoggedAt(agent, 'pool.member_joined')! - startedAt} ms`);
    expect(logEvents(agent, 'pool.member_joined')[0]!.msg).toContain(`127.0.0.1:${late.port} (server 3)`);
    expect(await metric(agent.metrics, 'pd3_agent_pool_members_joined_total')).toBe(1);
    expect(await metric(agent.metrics, 'pd3_agent_pool_members')).toBe(3);
    await waitUntil(async () => (await metric(agent.metrics, 'pd3_agent_servers_up')) === 3, 2000, 'three servers up');
    // The newcomer has by far the most free bytes: power of two choices picks it whenever drawn.
    const ids = await place(host, 30);
    expect(ids.filter((id) => id === 3).length).toBeGreaterThanOrEqual(10);
    const on3 = (await host.allocate(4096)).region;
    await host.write(on3, 0, Buffer.from('new'));
    expect((await host.read(on3, 0, 3)).toString()).toBe('new');

    // A malformed record at a member key is skipped and logged; the agent serves on.
    const client = new Etcd3({ hosts: etcd.url });
    try {
      await client.put(memberKey(prefix, 9)).value('{"v":1,"serverId":9');
    } finally {
      client.close();
    }
    await waitUntil(() => logEvents(agent, 'pool.bad_record').length > 0, 3000, 'pool.bad_record');
    expect(String(logEvents(agent, 'pool.bad_record')[0]!.key)).toBe(`${prefix}/members/9`);
    expect(await metric(agent.metrics, 'pd3_agent_pool_bad_records_total')).toBe(1);
    expect(await metric(agent.metrics, 'pd3_agent_pool_members')).toBe(3);
    expect((await place(host, 5)).length).toBe(5);
  }, 30_000);

  it('serves on through an etcd outage, logs and counts it once, and catches up when etcd is back', async () => {
    rig = new Rig();
    const own = await EtcdServer.create(ETCD!);
    rig.defer(() => own.close());
    await own.start();
    const prefix = freshPrefix();
    const servers = [await member(own.url, prefix, 1), await member(own.url, prefix, 2), await member(own.url, prefix, 3)];
    const host = rig.host('pool-outage');
    const agent = await poolAgent(own.url, prefix, host.name);
    await waitUntil(async () => (await metric(agent.metrics, 'pd3_agent_servers_up')) === 3, 5000, 'three servers up');
    expect(await metric(agent.metrics, 'pd3_agent_pool_etcd_up')).toBe(1);
    // Regions on servers 1 and 2, with data, read back all through the outage.
    const kept = new Map<number, Buffer>();
    while (kept.size < 6) {
      const { region } = await host.allocate(4096);
      if (region >>> C.REGION_LOCAL_BITS === 3) continue;
      kept.set(region, Buffer.from(`region ${region}`));
      await host.write(region, 0, kept.get(region)!);
    }
    // The load: a new region written, and every kept region read back, in rounds, for `ms`.
    let ops = 0;
    const failures: string[] = [];
    const loadFor = async (ms: number): Promise<void> => {
      for (const end = Date.now() + ms; Date.now() < end; await sleep(5)) {
        const where = { op: 'allocate', region: -1 };
        try {
          const { region } = await host.allocate(4096);
          Object.assign(where, { op: 'write', region });
          await host.write(region, 0, Buffer.from('x'));
          for (const [r, data] of kept) {
            Object.assign(where, { op: 'read', region: r });
            if (!(await host.read(r, 0, data.length)).equals(data)) failures.push(`region ${r}: other data`);
          }
          ops++;
        } catch (e) {
          failures.push(`${where.op} of region ${where.region}: ${(e as Error).message}`);
        }
      }
    };

    const load = loadFor(1500);
    const downAt = Date.now();
    await own.kill();
    await waitUntil(() => firstLoggedAt(agent, 'pool.etcd_down') !== null, 3000, 'pool.etcd_down');
    console.log(`etcd killed → pool.etcd_down after ${firstLoggedAt(agent, 'pool.etcd_down')! - downAt} ms`);
    expect(await metric(agent.metrics, 'pd3_agent_pool_etcd_up')).toBe(0);
    await load;
    // A member dies while etcd is away (between rounds of the load: an allocation in flight to a
    // server that dies fails, outage or not): its record outlives it until etcd is back.
    await servers[2]!.kill();
    await loadFor(2000);
    const opsDuringOutage = ops;
    expect(opsDuringOutage).toBeGreaterThan(10);
    expect(failures).toEqual([]);

    await own.start();
    const backAt = Date.now();
    await waitUntil(() => firstLoggedAt(agent, 'pool.etcd_back') !== null, 10_000, 'pool.etcd_back');
    const leftOf = (id: number): Array<Record<string, unknown>> => logEvents(agent, 'pool.member_left').filter((e) => e.serverId === id);
    await waitUntil(() => leftOf(3).length > 0, 10_000, 'server 3 left');
    console.log(`etcd restarted → pool.etcd_back after ${firstLoggedAt(agent, 'pool.etcd_back')! - backAt} ms ` +
      `(${String(logEvents(agent, 'pool.etcd_back')[0]!.caughtUp)} change(s) caught up by the list), server 3's ` +
      `pool.member_left after ${Date.parse(String(leftOf(3)[0]!.ts)) - backAt} ms; ${opsDuringOutage} load rounds during the outage`);
    expect(leftOf(3)[0]).toMatchObject({ address: `127.0.0.1:${servers[2]!.port}` });
    expect(await perServer(agent, 'pd3_agent_server_placeable', `127.0.0.1:${servers[2]!.port}`)).toBe(0);
    // etcd restarts every lease with a fresh TTL; a live member whose own etcd client still rests
    // etcd's host (5 s after failures) may miss its refresh and lose its lease too: it then left
    // and came back. Either way the pool settles on servers 1 and 2.
    const settled = async (): Promise<boolean> =>
      (await metric(agent.metrics, 'pd3_agent_pool_members')) === 2 &&
      [1, 2].every((id) => leftOf(id).length === logEvents(agent, 'pool.member_returned').filter((e) => e.serverId === id).length);
    await waitUntil(settled, 10_000, 'members 1 and 2 in the pool');
    await sleep(600); // past etcd's next lease-expiry pass: still so
    expect(await settled()).toBe(true);
    console.log(`members 1 and 2 meanwhile: ${leftOf(1).length + leftOf(2).length} left and came back`);
    expect(logEvents(agent, 'pool.etcd_down')).toHaveLength(1);
    expect(logEvents(agent, 'pool.etcd_back')).toHaveLength(1);
    expect(await metric(agent.metrics, 'pd3_agent_pool_etcd_outages_total')).toBe(1);
    expect(await metric(agent.metrics, 'pd3_agent_pool_etcd_up')).toBe(1);
    expect(new Set(await place(host, 20))).toEqual(new Set([1, 2]));
  }, 40_000);

  it('catches up, once etcd is in reach again, with members that left and joined while it was cut off', async () => {
    rig = new Rig();
    const prefix = freshPrefix();
    const servers = [await member(etcd.url, prefix, 1), await member(etcd.url, prefix, 2), await member(etcd.url, prefix, 3)];
    const relay = await Relay.open(etcd.url);
    rig.defer(() => relay.cut());
    const host = rig.host('pool-cut');
    const agent = await poolAgent(relay.url, prefix, host.name);
    await waitUntil(async () => (await metric(agent.metrics, 'pd3_agent_servers_up')) === 3, 5000, 'three servers up');

    // Only the agent loses etcd: server 3 dies and its record expires, server 4 registers.
    await relay.cut();
    await waitUntil(() => firstLoggedAt(agent, 'pool.etcd_down') !== null, 3000, 'pool.etcd_down');
    await servers[2]!.kill();
    const late = await member(etcd.url, prefix, 4);
    const client = new Etcd3({ hosts: etcd.url });
    try {
      await waitUntil(async () => (await client.get(memberKey(prefix, 3)).string()) === null, TTL_S * 1000 + 2000, 'record 3 expired');
      expect(await client.get(memberKey(prefix, 4)).string()).not.toBeNull();
    } finally {
      client.close();
    }
    expect(logEvents(agent, 'pool.member_left')).toHaveLength(0);
    expect(await metric(agent.metrics, 'pd3_agent_pool_members')).toBe(3); // the last membership it knew

    const restoredAt = Date.now();
    await relay.restore();
    await waitUntil(() => firstLoggedAt(agent, 'pool.etcd_back') !== null, 10_000, 'pool.etcd_back');
    await waitUntil(() => firstLoggedAt(agent, 'pool.member_joined') !== null, 3000, 'pool.member_joined');
    console.log(`etcd in reach again → pool.etcd_back after ${firstLoggedAt(agent, 'pool.etcd_back')! - restoredAt} ms`);
    expect(logEvents(agent, 'pool.etcd_back')[0]).toMatchObject({ caughtUp: 2, members: 3 });
    expect(logEvents(agent, 'pool.member_left')[0]).toMatchObject({ serverId: 3, address: `127.0.0.1:${servers[2]!.port}` });
    expect(logEvents(agent, 'pool.member_joined')[0]!.msg).toContain(`127.0.0.1:${late.port} (server 4)`);
    expect(await metric(agent.metrics, 'pd3_agent_pool_etcd_outages_total')).toBe(1);
    expect(await metric(agent.metrics, 'pd3_agent_pool_members_left_total')).toBe(1);
    expect(await metric(agent.metrics, 'pd3_agent_pool_members_joined_total')).toBe(1);
    const ids = new Set(await place(host, 30));
    expect([...ids].every((id) => [1, 2, 4].includes(id))).toBe(true);
    expect(ids.has(4)).toBe(true);
  }, 30_000);
});
