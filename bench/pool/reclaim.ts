// reclaim.ts — the reclamation phase of `npm run bench -- pool`: a real etcd and three memory
// servers in its pool (`--etcd --lease-ttl T --reclaim-grace G`), and one client
// (bench/pool/reclaim-client.ts, host CPUs) holding a tenant lease of TTL T with named regions
// on the servers, opened and written in direct mode. The client is killed with -9; the figure is the
// seconds from the kill until every server's pd3_memserver_regions gauge reads 0 (polled every
// 100 ms on their metrics endpoints: the servers hold no other regions). Expected: at most
// T (the lease runs out) + G (the grace) + 2 (the reapers look every 0.5 s, etcd expires leases in
// steps of 0.5 s, and the polling).
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Etcd3 } from 'etcd3';
import { constants } from '../../host/index.js';
import { tenantCredential } from '../../memserver/credential-command.js';
import { regionNamesPrefix } from '../../common/tenant-record.js';
import { spawnOnSide } from '../../examples/harness/core-layout.js';
import { EtcdServer } from '../../examples/harness/etcd-server.js';
import { findOnPath } from '../../examples/harness/on-path.js';
import { startMemserver, type Daemon } from '../../examples/harness/processes.js';
import { ChildLines } from './child-lines.js';
import { scrape } from '../../examples/harness/scrape.js';

const CLIENT = join(dirname(fileURLToPath(import.meta.url)), 'reclaim-client.js');
const SERVERS = 3;
const TENANT = 'gamma';
const PREFIX = '/pd3-bench';

/** The phase's settings. */
export interface ReclaimSettings {
  leaseTtlS: number;
  graceS: number;
  /** Named regions the client opens. */
  regions: number;
}

/** What the phase measured. */
export interface ReclaimPhase extends ReclaimSettings {
  /** Seconds from the client's kill -9 until no server holds a region of its tenant. */
  reclaimS: number;
  /** Regions and bytes the servers report reclaimed (reclaimed_regions / _bytes counters). */
  reclaimedRegions: number;
  reclaimedBytes: number;
  /** The tenant's region-name records left in etcd after the reclamation (should be 0). */
  namesLeft: number;
}

/** Runs the phase; null (after saying why) when etcd is not installed. */
export async function runReclaimPhase(settings: ReclaimSettings, log: (line: string) => void): Promise<ReclaimPhase | null> {
  const binary = findOnPath('etcd');
  if (binary === null) {
    log('  reclaim: skipped (etcd is not on PATH; Debian package etcd-server)');
    return null;
  }
  const token = randomBytes(16).toString('hex');
  const etcd = await EtcdServer.create(binary);
  const daemons: Daemon[] = [];
  let client: ChildLines | null = null;
  let segment = '';
  const kv = new Etcd3({ hosts: etcd.url });
  try {
    await etcd.start();
    const servers = [];
    for (let id = 0; id < SERVERS; id++) {
      const d = await startMemserver({ token, serverId: id, capacity: '256M', metrics: true, extra: ['--etcd', etcd.url, '--etcd-prefix', PREFIX,
        '--lease-ttl', String(settings.leaseTtlS), '--reclaim-grace', String(settings.graceS)] });
      daemons.push(d);
      servers.push(d);
    }
    const metrics = servers.map((s) => s.metrics);
    const child = spawnOnSide('host', process.execPath, [CLIENT, '--etcd', etcd.url, '--prefix', PREFIX, '--tenant', TENANT,
      '--servers', servers.map((s) => `127.0.0.1:${s.port}`).join(','), '--regions', String(settings.regions),
      '--lease-ttl', String(settings.leaseTtlS)], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, PD3_TOKEN: tenantCredential(token, TENANT, constants.TENANT_CREDENTIAL_CONTEXT) },
    });
    client = new ChildLines(child, 'the reclamation client');
    const ready = (await client.next()) as { segment: string; regions: Array<{ region: number; capacity: number }> };
    segment = ready.segment;
    const held = await scrape(metrics, 'pd3_memserver_regions');
    const on = new Set(ready.regions.map((r) => r.region >>> constants.REGION_LOCAL_BITS)).size;
    log(`  reclaim: tenant ${TENANT} holds ${ready.regions.length} named regions on ${on} servers (servers report ${held}); ` +
      `lease TTL ${settings.leaseTtlS} s, grace ${settings.graceS} s; kill -9 of the client`);
    if (held !== ready.regions.length) throw new Error(`the servers hold ${held} regions, the client opened ${ready.regions.length}`);

    await client.kill();
    const killed = Date.now();
    const limitMs = (settings.leaseTtlS + settings.graceS + 15) * 1000;
    let left = held;
    while (left > 0) {
      if (Date.now() - killed > limitMs) throw new Error(`${left} regions of tenant ${TENANT} still held ${limitMs / 1000} s after the kill`);
      await new Promise((r) => setTimeout(r, 100));
      left = await scrape(metrics, 'pd3_memserver_regions');
    }
    const reclaimS = (Date.now() - killed) / 1000;
    const reclaimedRegions = await scrape(metrics, 'pd3_memserver_reclaimed_regions_total');
    const reclaimedBytes = await scrape(metrics, 'pd3_memserver_reclaimed_bytes_total');
    // The reaper deletes the name records right after it frees the regions.
    let namesLeft = -1;
    for (let i = 0; i < 20 && namesLeft !== 0; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 100));
      namesLeft = Object.keys(await kv.getAll().prefix(regionNamesPrefix(PREFIX, TENANT)).strings()).length;
    }
    log(`  reclaim: all gone ${reclaimS.toFixed(2)} s after the kill (${reclaimedRegions} regions, ${reclaimedBytes} B reclaimed; ` +
      `${namesLeft} name records left in etcd)`);
    return { ...settings, reclaimS, reclaimedRegions, reclaimedBytes, namesLeft };
  } finally {
    await client?.kill();
    if (segment !== '') rmSync(join('/dev/shm', segment), { force: true }); // the killed client's segment
    kv.close();
    await Promise.all(daemons.map((d) => d.stop()));
    await etcd.close();
  }
}
