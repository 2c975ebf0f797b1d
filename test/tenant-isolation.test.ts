// tenant-isolation.test.ts — two tenants over the same memory servers (issue 13, "What it must
// show"): real pd3-memserver processes with a cluster token, and per tenant a host segment, a
// pd3-agent `--tenant NAME` (token: the tenant's credential) with the tee proxy, and a RESP app
// (examples/harness/tenant-kv-app.ts). Both tenants write the same 10,000 keys with values naming
// the tenant; then both are read at once through their proxies, the agents prefetching every key
// into the apps' Loading Zones. No value either app obtains (zone or remote read) or either client
// gets back is the other tenant's, prefetching really ran (zone hits, the servers' prefetch
// counters), and a read of the other tenant's region is refused PD3_E_FORBIDDEN. The positive
// controls show the check catches a leak: the detector alone, and two apps sharing one tenant,
// whose prefetches do answer with each other's records.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { constants as C, Pd3Error, type Pd3Host } from '../dist/host/index.js';
import { tenantCredential } from '../dist/memserver/credential-command.js';
import { TenantKvApp } from '../dist/examples/harness/tenant-kv-app.js';
import { getEveryKey } from '../dist/examples/harness/tenant-gets.js';
import { writeTenantRecords } from '../dist/examples/harness/tenant-records.js';
import { TenantValues } from '../dist/examples/harness/tenant-values.js';
import { metric, Rig, waitUntil } from './integration-helpers.js';

const rig = new Rig();
afterEach(() => rig.teardown());

const PREFETCHES = 'pd3_memserver_requests_total{op="prefetch"}';

/** One tenant's side: its segment, app (serving), agent and the port its clients use. */
interface TenantSide {
  host: Pd3Host;
  app: TenantKvApp;
  values: TenantValues;
  teePort: number;
  /** The app's own port: a GET there bypasses the proxy, so nothing is prefetched for it. */
  appPort: number;
  regions: number[];
  servers: number;
}

/** Starts `tenant`'s app and agent (connecting as `as`, default the tenant itself) over `ports`,
 *  and writes `keys` records into regions spread over `spread` servers. */
async function tenantSide(tenant: string, token: string, ports: number[], keys: number, spread: number, as = tenant): Promise<TenantSide> {
  const host = rig.host(`tenant-${tenant}`, { agentTimeoutMs: 2000 });
  // The app's port goes to the agent (--app) before the app has its records: connections wait.
  let app: TenantKvApp | null = null;
  const server: Server = createServer((socket) => {
    if (app === null) socket.destroy();
    else app.serve(socket);
  });
  rig.defer(() => new Promise<void>((r) => server.close(() => r())));
  const appPort = await new Promise<number>((r) => server.listen(0, '127.0.0.1', () => r((server.address() as { port: number }).port)));
  const agent = await rig.agent(host.name, ports, tenantCredential(token, as, C.TENANT_CREDENTIAL_CONTEXT), [
    '--tenant', as, '--prefetch-parser', 'resp', '--mirror', 'tee', '--app', `127.0.0.1:${appPort}`, '--tee-listen', '127.0.0.1:0',
  ]);
  await waitUntil(() => host.agentAlive(), 5000, `${tenant}'s agent heartbeat`);
  const values = new TenantValues(tenant, keys);
  const records = await writeTenantRecords(host, values, { regions: 6, servers: spread });
  app = new TenantKvApp(host, values, records, 15);
  return { host, app, values, teePort: Number(agent.ready.teePort), appPort, regions: records.regions.map((r) => r.region), servers: records.servers };
}

/** The sum of a metric over the memory servers. */
async function total(metricsAddresses: string[], name: string): Promise<number> {
  const each = await Promise.all(metricsAddresses.map((m) => metric(m, name)));
  return each.reduce((a, b) => a + b, 0);
}

describe('two tenants over the same memory servers', () => {
  it('the foreign-value detector flags the other tenant’s value (positive control, unit)', () => {
    const alpha = new TenantValues('alpha', 10);
    const beta = new TenantValues('beta', 10);
    expect(alpha.judge('key:5', alpha.value(5))).toBe('own');
    expect(alpha.judge('key:5', beta.value(5))).toBe('foreign');
    expect(beta.judge('key:5', alpha.value(5))).toBe('foreign');
    expect(alpha.judge('key:5', 'something else')).toBe('foreign');
    expect(alpha.judge('key:5', alpha.value(6))).toBe('wrong');
    expect(alpha.judge('key:5', 'alpha:5:00000000')).toBe('wrong'); // right tenant, not this run's value
    expect(alpha.judge('key:5', null)).toBe('missing');
    // A tenant whose name extends the other's is still another tenant.
    expect(new TenantValues('alpha2', 10).judge('key:5', alpha.value(5))).toBe('foreign');
  });

  it('the same 10,000 keys under load: 0 foreign values, most served prefetched, the other’s region forbidden', async () => {
    const KEYS = 10_000;
    const token = randomBytes(16).toString('hex');
    const servers = [];
    for (let id = 0; id < 3; id++) servers.push(await rig.memserverWithMetrics({ token, serverId: id, capacity: '64M' }));
    const ports = servers.map((s) => s.port);
    const metrics = servers.map((s) => s.metrics);
    const [alpha, beta] = await Promise.all([
      tenantSide('alpha', token, ports, KEYS, ports.length),
      tenantSide('beta', token, ports, KEYS, ports.length),
    ]);
    // Both tenants' regions lie on all three servers, side by side.
    expect([alpha.servers, beta.servers]).toEqual([3, 3]);
    expect(await total(metrics, 'pd3_memserver_index_keys')).toBeGreaterThanOrEqual(2 * KEYS);
    const prefetchesBefore = await total(metrics, PREFETCHES);

    // Both clients at once, every key, through each tenant's own proxy.
    const [a, b] = await Promise.all([getEveryKey(alpha.teePort, alpha.values, 200), getEveryKey(beta.teePort, beta.values, 200)]);
    const prefetches = (await total(metrics, PREFETCHES)) - prefetchesBefore;
    for (const [side, pass] of [[alpha, a], [beta, b]] as const) {
      const c = side.app.counts;
      console.log(`${side.values.tenant}: ${side.app.zoneHits} of ${c.gets} GETs from the Loading Zone, ` +
        `${c.gets - side.app.zoneHits} remote reads, foreign values ${side.app.foreign} (app) / ${pass.verdicts.foreign} (client), ${pass.ms} ms`);
    }
    console.log(`memory servers: ${prefetches} prefetches during the reads`);

    // Not one foreign value, from either source, at either end.
    expect([alpha.app.foreign, beta.app.foreign, a.verdicts.foreign, b.verdicts.foreign]).toEqual([0, 0, 0, 0]);
    // And nothing else amiss: every key answered with exactly the tenant's own value.
    expect(a.verdicts).toEqual({ own: KEYS, foreign: 0, wrong: 0, missing: 0 });
    expect(b.verdicts).toEqual({ own: KEYS, foreign: 0, wrong: 0, missing: 0 });
    for (const side of [alpha, beta]) {
      expect(side.app.counts.gets).toBe(KEYS);
      expect(side.app.counts.zone.wrong + side.app.counts.remote.wrong).toBe(0);
      // Prefetching really ran: most values came from the Loading Zone.
      expect(side.app.zoneHits).toBeGreaterThanOrEqual(KEYS / 2);
    }
    // … answered by the memory servers' prefetches (each zone hit is one answered prefetch).
    expect(prefetches).toBeGreaterThanOrEqual(alpha.app.zoneHits + beta.app.zoneHits);

    // The other path, judged the same way: GETs straight to the apps (no proxy, no prefetch) read
    // the tenant's own records remotely, both tenants at once. The only zone hits allowed are items
    // the first pass left in the zone (a prefetch that landed after its GET had gone remote): at
    // most what was pending in each zone before this pass.
    const sides = [alpha, beta] as const;
    const remoteBefore = sides.map((s) => s.app.counts.remote.own);
    const zoneBefore = sides.map((s) => s.app.counts.zone.own);
    const leftover = sides.map((s) => s.host.stats().lz_pending);
    const [da, db] = await Promise.all([getEveryKey(alpha.appPort, alpha.values, 200, 1000), getEveryKey(beta.appPort, beta.values, 200, 1000)]);
    expect([da.verdicts.own, db.verdicts.own]).toEqual([1000, 1000]);
    sides.forEach((s, i) => {
      const remote = s.app.counts.remote.own - remoteBefore[i]!;
      const zone = s.app.counts.zone.own - zoneBefore[i]!;
      expect(remote + zone).toBe(1000);
      expect(zone).toBeLessThanOrEqual(leftover[i]!);
    });
    expect([alpha.app.foreign, beta.app.foreign]).toEqual([0, 0]);

    // The other tenant's region: a status, never bytes — by read, write or deallocate.
    const refusalsBefore = await total(metrics, 'pd3_memserver_tenant_refusals_total');
    const codeOf = async (p: Promise<unknown>): Promise<string> => p.then(() => 'resolved', (e: unknown) => (e instanceof Pd3Error ? e.code : String(e)));
    for (const [reader, owner] of [[alpha, beta], [beta, alpha]] as const) {
      for (const region of owner.regions) expect(await codeOf(reader.host.read(region, 0, 64))).toBe('PD3_E_FORBIDDEN');
      expect(await codeOf(reader.host.write(owner.regions[0]!, 0, Buffer.from('overwrite')))).toBe('PD3_E_FORBIDDEN');
      expect(await codeOf(reader.host.deallocate(owner.regions[0]!))).toBe('PD3_E_FORBIDDEN');
    }
    expect((await total(metrics, 'pd3_memserver_tenant_refusals_total')) - refusalsBefore).toBe(alpha.regions.length + beta.regions.length + 4);
    // The owners' data is untouched by the refused attempts.
    expect((await getEveryKey(alpha.teePort, alpha.values, 100, 100)).verdicts.own).toBe(100);
    expect((await getEveryKey(beta.teePort, beta.values, 100, 100)).verdicts.own).toBe(100);
  }, 60_000);

  it('the check catches a leak: two apps sharing one tenant get each other’s values prefetched (positive control)', async () => {
    const KEYS = 400;
    const token = randomBytes(16).toString('hex');
    const server = await rig.memserverWithMetrics({ token, capacity: '64M' });
    // Both agents connect as the same tenant, so the server's index holds one address per key —
    // the last write's, beta's — and alpha's prefetches answer with beta's records.
    const alpha = await tenantSide('alpha', token, [server.port], KEYS, 1, 'shared');
    const beta = await tenantSide('beta', token, [server.port], KEYS, 1, 'shared');
    const pass = await getEveryKey(alpha.teePort, alpha.values, 100);
    console.log(`control: alpha got ${alpha.app.zoneHits} zone hits, ${alpha.app.foreign} foreign values (client: ${pass.verdicts.foreign})`);
    expect(alpha.app.zoneHits).toBeGreaterThanOrEqual(KEYS / 2);
    expect(alpha.app.counts.zone.foreign).toBe(alpha.app.zoneHits);
    expect(pass.verdicts.foreign).toBeGreaterThanOrEqual(KEYS / 2);
    // Its own remote reads still find its own records.
    expect(alpha.app.counts.remote.foreign).toBe(0);
    expect(beta.app.foreign).toBe(0);
  }, 30_000);
});

