// Tenants and reclamation (docs/pool.md): credentials derived from the cluster token admit a client
// to its own tenant only; a tenant reaches only its own regions; a client's named regions survive
// its restart within the grace period and are reclaimed once its lease has been gone that long;
// the default tenant is never reclaimed. Real memory servers, real etcd, clients in their own
// processes.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Logger } from '../dist/cli/logger.js';
import { regionNameKey } from '../dist/common/tenant-record.js';
import { agentOptions } from '../dist/dpu/agent-config.js';
import { constants, Pd3Host, poolServers, TenantSession } from '../dist/host/index.js';
import { MemServer, memServerOptions, tenantCredential } from '../dist/memserver/index.js';
import { uniqueName } from './helpers.js';
import { codeOf, waitUntil } from './integration-helpers.js';
import { EtcdServer, findEtcd, sharedEtcd } from './etcd-server.js';

const SECRET = 'cluster-secret-for-tests';
const MEMSERVER_CLI = new URL('../dist/memserver/cli.js', import.meta.url).pathname;
const CLIENT = new URL('./workers/tenant-client.mjs', import.meta.url).pathname;
const credential = (tenant: string): string => tenantCredential(SECRET, tenant, constants.TENANT_CREDENTIAL_CONTEXT);

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  while (cleanup.length > 0) await cleanup.pop()!();
});

async function startServer(extra: Record<string, unknown> = {}): Promise<{ server: MemServer; lines: string[] }> {
  const lines: string[] = [];
  const logger = new Logger('memserver', 'info', (l) => lines.push(l));
  const options = memServerOptions({ listen: '127.0.0.1:0', token: SECRET, metrics: 'off', capacity: '64M', ...extra }, {});
  const server = await MemServer.start(options, logger);
  cleanup.push(() => server.close());
  return { server, lines };
}

function directHost(server: MemServer, tenant: string | undefined, token: string): Pd3Host {
  const host = Pd3Host.create({
    name: uniqueName('tenant'),
    directOnly: true,
    directServers: [`127.0.0.1:${server.port}`],
    directToken: token,
    ...(tenant === undefined ? {} : { directTenant: tenant }),
  });
  cleanup.push(() => host.close());
  return host;
}

describe('tenants and credentials', () => {
  it('pd3-memserver credential prints what the memory servers accept, and refuses bad input', () => {
    const run = (args: string[]) =>
      spawnSync(process.execPath, [MEMSERVER_CLI, 'credential', ...args], { env: { ...process.env, PD3_TOKEN: SECRET }, encoding: 'utf8' });
    const ok = run(['--tenant', 'alpha']);
    expect(ok.status).toBe(0);
    expect(ok.stdout.trim()).toBe(credential('alpha'));
    expect(ok.stdout.trim()).toMatch(/^[0-9a-f]{64}$/);
    for (const [args, why] of [
      [['--tenant', 'bad name'], /tenant name/],
      [[], /needs --tenant/],
      [['--tenant', 'a'.repeat(65)], /tenant name/],
      [['--tenant', 'alpha', '--bogus'], /bogus/],
    ] as const) {
      const r = run([...args]);
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(why);
    }
  });

  it('admits a tenant only with its own credential, and a tenant reaches only its own regions', async () => {
    const { server } = await startServer();
    const alpha = directHost(server, 'alpha', credential('alpha'));
    const beta = directHost(server, 'beta', credential('beta'));
    const owner = directHost(server, undefined, SECRET); // the default tenant

    const a = await alpha.allocate(4096);
    await alpha.write(a.region, 0, Buffer.from('alpha-private-bytes'));
    const d = await owner.allocate(4096);

    // Wrong credentials: another tenant's, the cluster token as a tenant's, a made-up one.
    for (const [tenant, token] of [['alpha', credential('beta')], ['alpha', SECRET], ['alpha', 'f'.repeat(64)], [undefined, credential('alpha')]] as const) {
      const h = directHost(server, tenant, token);
      expect(await codeOf(h.allocate(4096))).toBe('PD3_E_AUTH');
    }
    // The server's counters are published after its loop pass, which may end after the refusal.
    await waitUntil(() => server.stats().auth_failures >= 4, 2000, 'four auth failures counted');

    // Another tenant's region: a status, never bytes, and nothing changes.
    expect(await codeOf(beta.read(a.region, 0, 19))).toBe('PD3_E_FORBIDDEN');
    expect(await codeOf(beta.write(a.region, 0, Buffer.from('overwritten')))).toBe('PD3_E_FORBIDDEN');
    expect(await codeOf(beta.deallocate(a.region))).toBe('PD3_E_FORBIDDEN');
    expect(await codeOf(owner.read(a.region, 0, 19))).toBe('PD3_E_FORBIDDEN');
    expect(await codeOf(alpha.read(d.region, 0, 8))).toBe('PD3_E_FORBIDDEN');
    expect((await alpha.read(a.region, 0, 19)).toString()).toBe('alpha-private-bytes');
    await waitUntil(() => server.stats().tenant_refusals === 5, 2000, 'five tenant refusals counted');
    expect(server.tenants().map((t) => [t.tenant, t.regions])).toEqual([['', 1], ['alpha', 1]]);
  });

  it('pd3-agent --tenant takes only a tenant name', () => {
    const base = { segment: 'x', servers: '127.0.0.1:7400', token: 't', metrics: 'off' };
    expect(agentOptions({ ...base, tenant: 'app-1' }, {}).tenant).toBe('app-1');
    expect(() => agentOptions({ ...base, tenant: 'app 1' }, {})).toThrow(/tenant name/);
    expect(() => agentOptions({ ...base, tenant: '' }, {})).toThrow(/tenant name/);
  });
});

const ETCD = findEtcd('lease-bound regions and their reclamation');

describe.skipIf(ETCD === null)('client leases, named regions and reclamation', () => {
  const TTL_S = 2;
  const GRACE_S = 2;
  const shared = sharedEtcd(ETCD!, 'rt');
  const { freshPrefix } = shared;

  /** A tenant's client process; resolves with its JSON line once it has written its marker. */
  async function client(prefix: string, server: MemServer, tenant: string, name: string, marker: string) {
    const child: ChildProcess = spawn(
      process.execPath,
      [CLIENT, shared.etcd.url, prefix, `127.0.0.1:${server.port}`, tenant, credential(tenant), name, marker, String(TTL_S)],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    // Runs after the kill below (cleanups run last first): a killed client leaves its segment behind.
    cleanup.push(() => rmSync(`/dev/shm/pd3-tc-${child.pid}`, { force: true }));
    cleanup.push(() => child.kill('SIGKILL'));
    const line = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once('line', resolve);
      child.once('exit', (code) => reject(new Error(`tenant client exited (${code}) before its line`)));
    });
    return { child, ...(JSON.parse(line) as { region: number; created: boolean; before: string }) };
  }

  const killed = (child: ChildProcess): Promise<void> =>
    new Promise((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });

  /** Seconds until `tenant` holds nothing on `server` (polled every 50 ms), or Infinity after `ms`. */
  async function secondsUntilGone(server: MemServer, tenant: string, ms: number): Promise<number> {
    const t0 = Date.now();
    while (Date.now() - t0 < ms) {
      if (!server.tenants().some((t) => t.tenant === tenant)) return (Date.now() - t0) / 1000;
      await new Promise((r) => setTimeout(r, 50));
    }
    return Infinity;
  }

  it('a client restarted within the grace period keeps its named region; a clean exit frees it after the grace', async () => {
    const prefix = freshPrefix();
    const { server, lines } = await startServer({ etcd: shared.etcd.url, etcdPrefix: prefix, leaseTtl: TTL_S, reclaimGrace: GRACE_S });
    const first = await client(prefix, server, 'kv-app', 'log', 'first-life');
    expect(first.created).toBe(true);
    await killed(first.child);
    // Back at once, within TTL + grace: the same region, with what the first life wrote.
    const second = await client(prefix, server, 'kv-app', 'log', 'second-life');
    expect(second.created).toBe(false);
    expect(second.region).toBe(first.region);
    expect(second.before).toBe('first-life');
    // The first life's lease expires, but the second's holds the tenant: nothing is reclaimed.
    await new Promise((r) => setTimeout(r, (TTL_S + GRACE_S + 1) * 1000));
    expect(server.tenants().find((t) => t.tenant === 'kv-app')?.regions).toBe(1);
    // A clean exit revokes the lease at once: the regions go one grace period later.
    const t0 = Date.now();
    second.child.stdin!.end();
    const gone = await secondsUntilGone(server, 'kv-app', (GRACE_S + 5) * 1000);
    const elapsed = (Date.now() - t0) / 1000;
    expect(gone).toBeLessThan(Infinity);
    expect(elapsed).toBeGreaterThanOrEqual(GRACE_S - 0.2);
    expect(elapsed).toBeLessThanOrEqual(GRACE_S + 2);
    expect(lines.some((l) => l.includes('"tenant.reclaim"'))).toBe(true);
    // The name record went with the region, so the next life starts afresh.
    expect(await shared.kv.get(regionNameKey(prefix, 'kv-app', 'log')).string()).toBeNull();
    const third = await client(prefix, server, 'kv-app', 'log', 'third-life');
    expect(third.created).toBe(true);
    expect(third.before).toBe('');
  }, 40_000);

  it('close() lets a region being opened get its name record before the session ends', async () => {
    const prefix = freshPrefix();
    const { server } = await startServer({ etcd: shared.etcd.url, etcdPrefix: prefix, leaseTtl: TTL_S });
    const host = directHost(server, 'closer', credential('closer'));
    const session = await TenantSession.open({ endpoints: [shared.etcd.url], prefix, tenant: 'closer', leaseTtlS: TTL_S });
    // Closed at once, while the open is still reading and writing its record in etcd.
    const opening = session.openRegion(host, 'late', 65536);
    await session.close();
    const { region, created } = await opening;
    expect(created).toBe(true);
    const record = await shared.kv.get(regionNameKey(prefix, 'closer', 'late')).string();
    expect(record).not.toBeNull();
    expect(JSON.parse(record!)).toMatchObject({ region });
  }, 20_000);

  it("a killed client's regions are reclaimed within TTL + grace, and the default tenant's never", async () => {
    const prefix = freshPrefix();
    const { server } = await startServer({ etcd: shared.etcd.url, etcdPrefix: prefix, leaseTtl: TTL_S, reclaimGrace: GRACE_S });
    const owner = directHost(server, undefined, SECRET);
    const kept = await owner.allocate(4096);
    const victim = await client(prefix, server, 'doomed', 'data', 'doomed-bytes');
    const reclaimedBefore = server.stats().reclaimed_regions;
    const t0 = Date.now();
    await killed(victim.child);
    const seconds = await secondsUntilGone(server, 'doomed', (TTL_S + GRACE_S + 5) * 1000);
    expect(seconds).toBeGreaterThanOrEqual(GRACE_S - 0.2); // not before the lease could have ended
    expect((Date.now() - t0) / 1000).toBeLessThanOrEqual(TTL_S + GRACE_S + 2);
    expect(server.stats().reclaimed_regions).toBe(reclaimedBefore + 1);
    // Its region is gone for a client of the same tenant, too.
    const same = directHost(server, 'doomed', credential('doomed'));
    expect(await codeOf(same.read(victim.region, 0, 8))).toBe('PD3_E_BAD_REGION');
    // The default tenant holds no lease and loses nothing.
    expect((await owner.read(kept.region, 0, 8)).length).toBe(8);
  }, 40_000);

  it('a direct-mode host takes its servers from the pool, and skips a malformed record', async () => {
    const prefix = freshPrefix();
    const a = await startServer({ etcd: shared.etcd.url, etcdPrefix: prefix, leaseTtl: TTL_S, serverId: 3 });
    const b = await startServer({ etcd: shared.etcd.url, etcdPrefix: prefix, leaseTtl: TTL_S, serverId: 9 });
    await shared.kv.put(`${prefix}/members/12`).value('{"v":1,"serverId":"twelve"}');
    const skipped: string[] = [];
    const servers = await poolServers({ endpoints: [shared.etcd.url], prefix, onBadRecord: (key) => skipped.push(key) });
    expect(servers).toEqual([`127.0.0.1:${a.server.port}`, `127.0.0.1:${b.server.port}`]);
    expect(skipped).toEqual([`${prefix}/members/12`]);
    const host = Pd3Host.create({ name: uniqueName('pool-direct'), directOnly: true, directServers: servers, directToken: SECRET });
    cleanup.push(() => host.close());
    const ids = new Set<number>();
    for (let i = 0; i < 16; i++) ids.add((await host.allocate(4096)).region >>> constants.REGION_LOCAL_BITS);
    expect(ids).toEqual(new Set([3, 9]));
    await expect(poolServers({ endpoints: [shared.etcd.url], prefix: `${prefix}-empty` })).rejects.toThrow(/no memory server is registered/);
    await expect(poolServers({ endpoints: ['http://127.0.0.1:1'], prefix })).rejects.toThrow(/cannot read the pool/);
  }, 20_000);

  it('an etcd kill and restart under load loses no acknowledged write, and reclaims nothing while etcd is away', async () => {
    // Its own etcd, since this test kills it.
    const own = await EtcdServer.create(ETCD!);
    cleanup.push(() => own.close());
    await own.start();
    const prefix = freshPrefix();
    const { server, lines } = await startServer({ etcd: own.url, etcdPrefix: prefix, leaseTtl: TTL_S, reclaimGrace: GRACE_S });
    const host = directHost(server, 'steady', credential('steady'));
    const session = await TenantSession.open({ endpoints: [own.url], prefix, tenant: 'steady', leaseTtlS: TTL_S });
    cleanup.push(() => session.close());
    const { region } = await session.openRegion(host, 'journal', 1 << 20);

    // Writes of distinct 64-byte entries, one after another; each that was acknowledged is kept.
    const acknowledged = new Map<number, Buffer>();
    const failures: string[] = [];
    let next = 0;
    const writeFor = async (ms: number): Promise<void> => {
      for (const end = Date.now() + ms; Date.now() < end && next < 16384; await new Promise((r) => setTimeout(r, 2))) {
        const slot = next++;
        const entry = Buffer.from(`entry ${slot} `.padEnd(64, '.'));
        try {
          await host.write(region, slot * 64, entry);
          acknowledged.set(slot, entry);
        } catch (e) {
          failures.push(`slot ${slot}: ${(e as Error).message}`);
        }
      }
    };
    await writeFor(500);
    await own.kill();
    // Down for longer than TTL + grace: a reaper that trusted a stale view would free the region.
    await writeFor((TTL_S + GRACE_S + 1) * 1000);
    expect(server.tenants().find((t) => t.tenant === 'steady')?.regions).toBe(1);
    await own.start();
    await writeFor(1500);
    await new Promise((r) => setTimeout(r, (GRACE_S + 1) * 1000)); // the session's lease is back in view
    expect(failures).toEqual([]);
    expect(acknowledged.size).toBeGreaterThan(200);
    for (const [slot, entry] of acknowledged) expect((await host.read(region, slot * 64, 64)).equals(entry)).toBe(true);
    expect(server.tenants().find((t) => t.tenant === 'steady')?.regions).toBe(1);
    expect(server.stats().reclaimed_regions).toBe(0);
    expect(lines.some((l) => l.includes('"pool.reaper_blind"'))).toBe(true);
    console.log(`etcd outage of ${TTL_S + GRACE_S + 1} s under load: ${acknowledged.size} writes acknowledged, all read back; nothing reclaimed`);
  }, 40_000);
});
