// index.ts — pd3/memserver: the memory server's TS API: MemServer runs one in-process (the
// pd3-memserver CLI is memserver/cli.ts), with the request vocabulary it executes (from the C headers).
import { constants } from './native.js';

/** Operations of host requests (pd3_request.op_id >> 14). */
export const RequestOp = {
  READ: constants.OP_READ,
  WRITE: constants.OP_WRITE,
  PREFETCH: constants.OP_PREFETCH,
  CONTROL: constants.OP_CONTROL,
} as const;

/** CONTROL sub-operations (pd3_request.region of a CONTROL request). */
export const ControlOp = {
  ALLOCATE: constants.CTL_ALLOCATE,
  DEALLOCATE: constants.CTL_DEALLOCATE,
  STATS: constants.CTL_STATS,
  FREEZE: constants.CTL_FREEZE,
  SEAL: constants.CTL_SEAL,
  THAW: constants.CTL_THAW,
} as const;

export { MemServer } from './server.js';
export { MAX_WARM_AHEAD, memServerOptions, parseMemServerCommand } from './config.js';
export type { MemServerOptions, MemServerSettings } from './config.js';
export type { Endpoint } from '../cli/endpoint.js';
export { Logger } from '../cli/logger.js';
export type { LogLevel, LogFields } from '../cli/logger.js';
export { UsageError } from '../cli/usage-error.js';
export { tenantCredential } from './credential-command.js';
export type { TenantUsage, NativeTransportClient, TransportReply } from './native.js';
export { decideMove, MIN_LOAD_TO_MOVE } from './migrator.js';
export { HeatMeter, serverLoad, HEAT_HALF_LIFE_MS, TIER_MISS_WEIGHT, type RegionAccesses } from './heat.js';
export { STUCK_MOVE_MS } from './move-janitor.js';
