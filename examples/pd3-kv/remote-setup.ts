// remote-setup.ts — the remote side of a pd3-kv mode: the Pd3Host (direct to the memory servers,
// or a segment for the PD3 agent), where flushed pages go, the flusher and the miss path.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pd3/cli';
import { Pd3Host, zoneWaitFor, type TenantSession, type ZoneWait } from 'pd3/host';
import { usesAgent, type KvOptions } from './config.js';
import { DirectMissPath } from './direct-miss-path.js';
import { Flusher } from './flusher.js';
import type { HybridLog } from './hybrid-log.js';
import { LeapMissPath } from './leap-miss-path.js';
import type { MissPath } from './miss-path.js';
import { RemotePages, type RegionSource } from './remote-pages.js';
import type { KvStats } from './stats.js';
import { ZoneMissPath } from './zone-miss-path.js';

/** Everything a non-local mode adds. */
export interface RemoteSide {
  readonly host: Pd3Host;
  readonly remote: RemotePages;
  readonly flusher: Flusher;
  readonly missPath: MissPath;
  /** pd3 mode: how long zone misses wait now (INFO's zone_wait_us). */
  readonly zoneWait?: ZoneWait;
}

/** Builds the remote side of `o.mode` (not local) and hooks the flusher to the log. With a pool
 *  session, the log's regions are the tenant's regions named LOGNAME.INDEX. */
export function setUpRemote(o: KvOptions, log: HybridLog, stats: KvStats, logger: Logger, session: TenantSession | null): RemoteSide {
  const host = usesAgent(o.mode)
    ? Pd3Host.create({ name: o.segment!, loadingZoneBytes: o.loadingZoneBytes, fallback: 'fail' })
    : Pd3Host.create({
        // Direct-only modes still need a (private) segment: the host library lives in one.
        name: `pd3-kv-${process.pid}-${randomBytes(4).toString('hex')}`,
        directOnly: true,
        directServers: o.memservers,
        directToken: o.token,
        ...(o.pool === undefined ? {} : { directTenant: o.pool.tenant }),
      });
  const named: RegionSource | undefined =
    session === null || o.pool === undefined
      ? undefined
      : async (index, bytes) => {
          const region = await session.openRegion(host, `${o.pool!.logName}.${index}`, bytes);
          if (!region.created) {
            logger.info('log.region_found', `region ${index} of log ${o.pool!.logName} found again (from before a restart)`, {
              index,
              region: region.region,
            });
          }
          return region;
        };
  const remote = new RemotePages(host, o.pageSize, o.regionSize, named);
  const flusher = new Flusher(log, remote, o.budget, stats, logger);
  log.listener = flusher;
  let missPath: MissPath;
  let zoneWait: ZoneWait | undefined;
  switch (o.mode) {
    case 'pd3':
      zoneWait = zoneWaitFor(o.zoneWaitUs);
      missPath = new ZoneMissPath(host, remote, stats, zoneWait);
      break;
    case 'leap': {
      const isRemote = (page: number): boolean => page < flusher.durablePages && log.page(page) === undefined;
      missPath = new LeapMissPath(remote, stats, Math.max(1, Math.floor(o.leapCacheBytes / o.pageSize)), isRemote);
      break;
    }
    default:
      missPath = new DirectMissPath(remote, stats, o.mode === 'async');
  }
  return { host, remote, flusher, missPath, ...(zoneWait === undefined ? {} : { zoneWait }) };
}
