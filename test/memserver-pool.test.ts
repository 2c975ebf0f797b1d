// pd3-memserver in an etcd-run pool, against a real etcd on loopback: the record it keeps under
// its lease, leaving at a stop, expiring after a kill -9, a server id already taken, etcd out of
// reach at start and killed while serving, and a malformed record at its key.
import { spawn } from 'node:child_process';
import { createConnection } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { Logger } from '../dist/cli/logger.js';
import { memberKey, parseMemberRecord } from '../dist/common/pool-record.js';
import { memServerOptions } from '../dist/memserver/config.js';
import { MemServer } from '../dist/memserver/server.js';
import { Agent } from '../dist/dpu/agent.js';
import { agentOptions } from '../dist/dpu/agent-config.js';
import { Pd3Host } from '../dist/host/index.js';
import { uniqueName } from './helpers.js';
import { EtcdServer, findEtcd, freePort } from './etcd-server.js';

const ETCD = findEtcd('pd3-memserver in an etcd-run pool');
const MEMSERVER_CLI = new URL('../dist/memserver/cli.js', import.meta.url).pathname;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` every 50 ms until it returns true; false after `ms`. */
async function eventually(probe: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await probe()) return true;
    await sleep(50);
  }
  return probe();
}

/** A memory server in this process with its log lines collected. */
async function startServer(etcd: string, extra: Record<string, unknown> = {}): Promise<{ server: MemServer; lines: string[] }> {
  const lines: string[] = [];
  const logger = new Logger('memserver', 'info', (l) => lines.push(l));
  const options = memServerOptions({ listen: '127.0.0.1:0', token: 't', metrics: 'off', capacity: '64M', etcd, leaseTtl: 2, ...extra }, {});
  return { server: await MemServer.start(options, logger), lines };
}

/** Whether a TCP connection to `port` opens (the transport is serving). */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

describe.skipIf(ETCD === null)('pd3-memserver in an etcd-run pool', () => {
  let etcd: EtcdServer;
  let client: Etcd3;
  let prefixCount = 0;
  // Each test its own prefix: records of one never meet another's.
  const freshPrefix = (): string => `/t${process.pid}-${prefixCount++}`;
  const read = (key: string): Promise<string | null> => client.get(key).string();

  beforeAll(async () => {
    etcd = await EtcdServer.create(ETCD!);
    await etcd.start();
    client = new Etcd3({ hosts: etcd.url });
  }, 20_000);

  afterAll(async () => {
    client?.close();
    await etcd?.close();
  });

  it('publishes its record under a lease while it serves, and removes it when it stops', async () => {
    const prefix = freshPrefix();
    const { server, lines } = await startServer(etcd.url, { etcdPrefix: prefix, serverId: 5 });
    try {
      expect(server.pool!.state).toBe('registered');
      const key = memberKey(prefix, 5);
      const text = await read(key);
      expect(text).not.toBeNull();
      const record = parseMemberRecord(prefix, key, text!);
      expect(record.address).toBe(`127.0.0.1:${server.port}`);
      expect(record.capacityBytes).toBe(64 * 2 ** 20);
      expect(record.freeBytes).toBe(64 * 2 ** 20);
      expect(record.harvestableBytes).toBeGreaterThan(0);
      const lease = (await client.get(key).exec()).kvs[0]!.lease;
      expect(lease).not.toBe('0');
      // Refreshed every third of the TTL: updatedMs moves, the lease stays.
      await sleep(1_600);
      const later = parseMemberRecord(prefix, key, (await read(key))!);
      expect(later.updatedMs).toBeGreaterThan(record.updatedMs);
      expect((await client.get(key).exec()).kvs[0]!.lease).toBe(lease);
      expect(server.pool!.refreshes).toBeGreaterThanOrEqual(1);
      expect(server.metrics()).toMatch(/^pd3_memserver_pool_registered 1$/m);
      expect(lines.some((l) => l.includes('"event":"pool.registered"'))).toBe(true);
      await server.close();
      expect(await read(key)).toBeNull(); // revoked at once, not a TTL later
      expect(lines.some((l) => l.includes('"event":"pool.left"'))).toBe(true);
    } finally {
      await server.close();
    }
  }, 20_000);

  it('drops out of the pool within one TTL of a kill -9', async () => {
    const prefix = freshPrefix();
    const port = await freePort();
    const child = spawn(process.execPath, [MEMSERVER_CLI, '--listen', `127.0.0.1:${port}`, '--capacity', '16M', '--metrics', 'off',
      '--etcd', etcd.url, '--etcd-prefix', prefix, '--lease-ttl', '2', '--server-id', '1'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, PD3_TOKEN: 't' },
    });
    const key = memberKey(prefix, 1);
    try {
      expect(await eventually(async () => (await read(key)) !== null, 10_000)).toBe(true);
      const killedAt = Date.now();
      child.kill('SIGKILL');
      expect(await eventually(async () => (await read(key)) === null, 4_000)).toBe(true);
      const goneAfterMs = Date.now() - killedAt;
      // etcd ends a lease at its TTL after the last keep-alive, which came at most a third of it
      // before the kill; its expiry checks run every 500 ms.
      expect(goneAfterMs).toBeLessThanOrEqual(2_000 + 600);
    } finally {
      child.kill('SIGKILL');
    }
  }, 20_000);

  it('refuses a server id another server holds, and takes it once that server leaves', async () => {
    const prefix = freshPrefix();
    const first = await startServer(etcd.url, { etcdPrefix: prefix, serverId: 2 });
    const second = await startServer(etcd.url, { etcdPrefix: prefix, serverId: 2 });
    try {
      expect(second.server.pool!.state).toBe('conflict');
      expect(second.server.pool!.conflicts).toBe(1);
      expect(second.lines.some((l) => l.includes('"event":"pool.id_taken"') && l.includes(`127.0.0.1:${first.server.port}`))).toBe(true);
      const key = memberKey(prefix, 2);
      expect(parseMemberRecord(prefix, key, (await read(key))!).address).toBe(`127.0.0.1:${first.server.port}`);
      // The refused server still serves its transport: only its pool membership waits.
      expect(await accepts(second.server.port)).toBe(true);
      await first.server.close();
      expect(await eventually(async () => second.server.pool!.state === 'registered', 3_000)).toBe(true);
      expect(parseMemberRecord(prefix, key, (await read(key))!).address).toBe(`127.0.0.1:${second.server.port}`);
    } finally {
      await first.server.close();
      await second.server.close();
    }
  }, 20_000);

  it('replaces a malformed record at its key, logging it', async () => {
    const prefix = freshPrefix();
    const key = memberKey(prefix, 4);
    await client.put(key).value('{"v":1,"garbage');
    const { server, lines } = await startServer(etcd.url, { etcdPrefix: prefix, serverId: 4 });
    try {
      expect(server.pool!.state).toBe('registered');
      expect(parseMemberRecord(prefix, key, (await read(key))!).address).toBe(`127.0.0.1:${server.port}`);
      expect(lines.some((l) => l.includes('replaced a malformed record'))).toBe(true);
    } finally {
      await server.close();
    }
  }, 20_000);

  it('serves with etcd out of reach at start, and registers once etcd is there', async () => {
    const late = await EtcdServer.create(ETCD!);
    const { server, lines } = await startServer(late.url, { serverId: 6 });
    try {
      expect(server.pool!.state).toBe('unreachable');
      expect(await accepts(server.port)).toBe(true);
      expect(lines.some((l) => l.includes('"event":"pool.etcd_unreachable"'))).toBe(true);
      await late.start();
      // Retries back off up to a third of the TTL; the client's breaker may hold a host for 5 s.
      expect(await eventually(async () => server.pool!.state === 'registered', 9_000)).toBe(true);
      const c = new Etcd3({ hosts: late.url });
      try {
        expect(await c.get(memberKey('/pd3', 6)).string()).not.toBeNull();
      } finally {
        c.close();
      }
      expect(server.pool!.failures).toBeGreaterThan(0);
    } finally {
      await server.close();
      await late.close();
    }
  }, 30_000);

  it('keeps serving through an etcd crash longer than its TTL, and is registered again after it', async () => {
    const own = await EtcdServer.create(ETCD!);
    await own.start();
    const { server, lines } = await startServer(own.url, { serverId: 7 });
    try {
      expect(server.pool!.state).toBe('registered');
      await own.kill();
      await sleep(3_000); // longer than the 2 s TTL
      expect(server.pool!.state).toBe('unreachable');
      expect(await accepts(server.port)).toBe(true);
      expect(server.metrics()).toMatch(/^pd3_memserver_pool_registered 0$/m);
      await own.start();
      expect(await eventually(async () => server.pool!.state === 'registered', 9_000)).toBe(true);
      const c = new Etcd3({ hosts: own.url });
      try {
        const key = memberKey('/pd3', 7);
        const record = parseMemberRecord('/pd3', key, (await c.get(key).string())!);
        expect(record.address).toBe(`127.0.0.1:${server.port}`);
      } finally {
        c.close();
      }
      expect(server.pool!.failures).toBeGreaterThan(0);
      expect(lines.filter((l) => l.includes('"event":"pool.etcd_unreachable"'))).toHaveLength(1); // one line per outage
    } finally {
      await server.close();
      await own.close();
    }
  }, 40_000);

  it('keeps its lease through an etcd restart shorter than its TTL: it refreshes within a third of a TTL of etcd answering', async () => {
    // etcd gives every lease a fresh TTL when it starts again, so a refresh that gets through
    // within the TTL keeps the lease. A client that rests etcd's host for seconds after failures
    // misses it: the member then leaves the pool and comes back, and agents stop placing there.
    const own = await EtcdServer.create(ETCD!);
    await own.start();
    const { server, lines } = await startServer(own.url, { serverId: 8 });
    const leaseOfRecord = async (): Promise<string | null> => {
      const c = new Etcd3({ hosts: own.url });
      try {
        const kv = (await c.get(memberKey('/pd3', 8)).exec()).kvs[0];
        return kv === undefined ? null : String(kv.lease);
      } finally {
        c.close();
      }
    };
    try {
      const lease = await leaseOfRecord();
      expect(lease).not.toBeNull();
      await own.kill();
      await sleep(1_500); // two refreshes fail (one every 2/3 s), and the retries after them
      expect(server.pool!.state).toBe('unreachable');
      await own.start();
      const back = Date.now();
      expect(await eventually(async () => server.pool!.state === 'registered', 2_000)).toBe(true);
      const afterMs = Date.now() - back;
      await sleep(2_500); // past the TTL etcd restarted the lease with, and a lease-expiry pass
      expect(lines.filter((l) => l.includes('"event":"pool.lease_lost"'))).toEqual([]);
      expect(await leaseOfRecord()).toBe(lease);
      expect(server.pool!.state).toBe('registered');
      console.log(`etcd restarted: registered again ${afterMs} ms after etcd answered, on the same lease`);
    } finally {
      await server.close();
      await own.close();
    }
  }, 30_000);

  it('gives an agent started with --etcd the servers registered at its start, skipping a malformed record', async () => {
    const prefix = freshPrefix();
    const a = await startServer(etcd.url, { etcdPrefix: prefix, serverId: 1 });
    const b = await startServer(etcd.url, { etcdPrefix: prefix, serverId: 2 });
    await client.put(memberKey(prefix, 9)).value('{"v":1,"serverId":9}');
    const host = Pd3Host.create({ name: uniqueName('pool-agent') });
    const lines: string[] = [];
    let agent: Agent | null = null;
    try {
      agent = await Agent.start(agentOptions({ segment: host.name, etcd: etcd.url, etcdPrefix: prefix, token: 't', metrics: 'off' }, {}),
        new Logger('agent', 'info', (l) => lines.push(l)));
      const servers = agent.servers();
      expect(servers.map((s) => s.endpoint).sort()).toEqual([`127.0.0.1:${a.server.port}`, `127.0.0.1:${b.server.port}`].sort());
      expect(servers.every((s) => s.connected)).toBe(true);
      expect(lines.some((l) => l.includes('"event":"pool.bad_record"') && l.includes(`${prefix}/members/9`))).toBe(true);
      expect(lines.some((l) => l.includes('"event":"pool.members"'))).toBe(true);
      // It serves: an allocation lands on one of them, by its server id.
      const { region } = await host.allocate(4096);
      expect([1, 2]).toContain(region >>> 16);
    } finally {
      await agent?.close();
      host.close();
      await a.server.close();
      await b.server.close();
    }
  }, 20_000);

  it('refuses to start an agent from a pool with no members, or from an etcd it cannot reach', async () => {
    const host = Pd3Host.create({ name: uniqueName('pool-empty') });
    const quiet = new Logger('agent', 'error', () => {});
    try {
      await expect(Agent.start(agentOptions({ segment: host.name, etcd: etcd.url, etcdPrefix: freshPrefix(), token: 't', metrics: 'off' }, {}), quiet))
        .rejects.toThrow(/no memory server is registered in the pool under \/t/);
      const nowhere = `http://127.0.0.1:${await freePort()}`;
      await expect(Agent.start(agentOptions({ segment: host.name, etcd: nowhere, token: 't', metrics: 'off' }, {}), quiet))
        .rejects.toThrow(/cannot read the pool's members from etcd/);
    } finally {
      host.close();
    }
  }, 20_000);
});
