// tenants.ts — the tenant phase of `npm run bench -- pool`: two tenants, alpha and beta, over the
// same three memory servers, each with its own data system (bench/pool/tenant-app.ts, host CPUs)
// and its own pd3-agent `--tenant` (token: the tenant's credential) with the tee proxy. Both write
// the same keys with values naming the tenant; then both are read at once through their proxies, the
// agents prefetching each key into the app's Loading Zone. Counted: foreign values (a value of the
// other tenant obtained by an app or returned to a client — must be 0), zone hits (so that 0 is
// not vacuous), the servers' prefetches, and reads of the other tenant's regions (PD3_E_FORBIDDEN).
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { constants } from '../../host/index.js';
import { tenantCredential } from '../../memserver/credential-command.js';
import { spawnOnSide } from '../../examples/harness/core-layout.js';
import { startAgent, startMemserver, type Daemon } from '../../examples/harness/processes.js';
import { getEveryKey, type GetPass } from '../../examples/harness/tenant-gets.js';
import type { TenantAppCounts } from '../../examples/harness/tenant-kv-app.js';
import { TenantValues } from '../../examples/harness/tenant-values.js';
import { ChildLines } from './child-lines.js';
import { scrape } from '../../examples/harness/scrape.js';

const APP = join(dirname(fileURLToPath(import.meta.url)), 'tenant-app.js');
const TENANTS = ['alpha', 'beta'] as const;
const SERVERS = 3;
const PREFETCHES = 'pd3_memserver_requests_total{op="prefetch"}';

/** What the tenant phase measured. */
export interface TenantPhase {
  keys: number;
  /** Values of the other tenant, obtained by either app (zone or remote read) or returned to either client. */
  foreignValues: number;
  /** Values that were the tenant's own but wrong, or missing (should be 0 too). */
  wrongOrMissing: number;
  /** Zone hits ÷ GETs, per tenant. */
  zoneHitRatio: Record<string, number>;
  /** PREFETCH requests the memory servers executed during the reads. */
  prefetches: number;
  /** Reads of the other tenant's regions answered PD3_E_FORBIDDEN, and reads tried. */
  forbidden: number;
  probes: number;
  /** Wall-clock ms of the concurrent reads. */
  readMs: number;
}

/** One tenant's processes. */
interface Side {
  tenant: string;
  app: ChildLines;
  /** Its regions (ids), probed by the other tenant. */
  regions: number[];
}

/** Runs the phase with `keys` keys per tenant; prints progress with `log`. */
export async function runTenantPhase(keys: number, log: (line: string) => void): Promise<TenantPhase> {
  const token = randomBytes(16).toString('hex');
  const daemons: Daemon[] = [];
  const apps: ChildLines[] = [];
  const segments: string[] = [];
  try {
    const servers = [];
    for (let id = 0; id < SERVERS; id++) {
      const d = await startMemserver({ token, serverId: id, capacity: '256M', metrics: true });
      daemons.push(d);
      servers.push(d);
    }
    const ports = servers.map((s) => s.port);
    const sides: Side[] = [];
    const teePorts: number[] = [];
    // The driver judges what its clients get back: the apps' values come from seeds it draws.
    const values = TENANTS.map((t) => new TenantValues(t, keys));
    for (const [i, tenant] of TENANTS.entries()) {
      const child = spawnOnSide('host', process.execPath, [APP, '--tenant', tenant, '--keys', String(keys), '--servers', String(SERVERS),
        '--seed', values[i]!.seed], { stdio: ['pipe', 'pipe', 'inherit'] });
      const app = new ChildLines(child, `tenant ${tenant}'s app`);
      apps.push(app);
      const { segment, port } = (await app.next()) as { segment: string; port: number };
      segments.push(segment);
      const credential = tenantCredential(token, tenant, constants.TENANT_CREDENTIAL_CONTEXT);
      const agent = await startAgent(segment, ports, credential, ['--tenant', tenant, '--prefetch-parser', 'resp', '--mirror', 'tee',
        '--app', `127.0.0.1:${port}`, '--tee-listen', '127.0.0.1:0']);
      daemons.push(agent);
      teePorts.push(Number(agent.ready.teePort));
      sides.push({ tenant, app, regions: [] });
    }
    for (const side of sides) {
      const ready = (await side.app.next()) as { regions: number[]; servers: number; bytes: number; ms: number };
      side.regions = ready.regions;
      log(`  ${side.tenant}: ${keys} records (${ready.bytes} B) written through its agent into ${ready.regions.length} regions on ${ready.servers} servers in ${ready.ms} ms`);
    }

    const metrics = servers.map((s) => s.metrics);
    const prefetchesBefore = await scrape(metrics, PREFETCHES);
    const started = Date.now();
    const passes: GetPass[] = await Promise.all(values.map((v, i) => getEveryKey(teePorts[i]!, v, 200)));
    const readMs = Date.now() - started;
    const prefetches = (await scrape(metrics, PREFETCHES)) - prefetchesBefore;

    let forbidden = 0;
    let probes = 0;
    for (const [i, side] of sides.entries()) {
      const other = sides[1 - i]!;
      side.app.send({ cmd: 'probe', regions: other.regions });
      const { probe } = (await side.app.next()) as { probe: Record<string, number> };
      forbidden += probe.PD3_E_FORBIDDEN ?? 0;
      probes += other.regions.length;
    }
    let foreignValues = 0;
    let wrongOrMissing = 0;
    const zoneHitRatio: Record<string, number> = {};
    for (const [i, side] of sides.entries()) {
      side.app.send({ cmd: 'report' });
      const { counts } = (await side.app.next()) as { counts: TenantAppCounts };
      const pass = passes[i]!.verdicts;
      const zoneHits = counts.zone.own + counts.zone.foreign + counts.zone.wrong + counts.zone.missing;
      foreignValues += counts.zone.foreign + counts.remote.foreign + pass.foreign;
      wrongOrMissing += counts.zone.wrong + counts.remote.wrong + pass.wrong + pass.missing;
      zoneHitRatio[side.tenant] = counts.gets > 0 ? zoneHits / counts.gets : 0;
      log(`  ${side.tenant}: ${counts.gets} GETs, ${zoneHits} from the Loading Zone, ${counts.gets - zoneHits} remote reads; ` +
        `foreign values ${counts.zone.foreign + counts.remote.foreign} (app) / ${pass.foreign} (client); ${passes[i]!.ms} ms`);
    }
    log(`  memory servers: ${prefetches} prefetches during the reads; reads of the other tenant's regions: ${forbidden} of ${probes} PD3_E_FORBIDDEN`);
    return { keys, foreignValues, wrongOrMissing, zoneHitRatio, prefetches, forbidden, probes, readMs };
  } finally {
    await Promise.all(apps.map((a) => a.kill()));
    for (const s of segments) rmSync(join('/dev/shm', s), { force: true }); // gone already unless an app was killed
    await Promise.all(daemons.map((d) => d.stop()));
  }
}
