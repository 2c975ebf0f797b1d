// index.ts — pd3/host: the host library's TS API.
export { Pd3Host } from './pd3-host.js';
export type { Pd3HostOptions, AllocatedRegion, Pd3HostStats, CheckAndReturnImpl } from './pd3-host.js';
export { Pd3Error, status } from './errors.js';
export { LoadingZoneReader } from './lz-reader.js';
export { AdaptiveZoneWait, FixedZoneWait, zoneWaitFor } from './zone-wait.js';
export type { ZoneWait } from './zone-wait.js';
export { lzKeyHash } from './lz-hash.js';
export { constants, MAX_PUBLISH_BATCH } from './native.js';
export type { PlacementPolicy } from './native.js';
export type { NativeConstants, ControlField } from '../common/constants.js';
export { TenantSession } from './tenant-session.js';
export type { TenantSessionOptions, NamedRegion } from './tenant-session.js';
export { poolServers, PoolServers } from './pool-servers.js';
export type { PoolServersOptions, FollowPoolOptions, PoolServersLog } from './pool-servers.js';
export type { PoolWatchStats } from '../common/pool-watch.js';
