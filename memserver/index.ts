// index.ts — pd3/memserver: the memory server's TS API. The server itself (regions, index,
// transport, pd3-memserver CLI) arrives with the remote-memory issue; what exists now is the
// request vocabulary it will execute, taken from the C headers.
import { constants } from '../host/native.js';

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
} as const;
