// errors.ts — the host library's error vocabulary: Pd3Error (shared by every part) and status().
import { constants } from './native.js';

export { Pd3Error, callNative } from '../common/errors.js';

/** The status code of a name, e.g. status('PD3_E_AGAIN') === -1. Throws for an unknown name. */
export function status(name: string): number {
  const code = constants.status[name];
  if (code === undefined) throw new Error(`unknown PD3 status ${name}`);
  return code;
}
