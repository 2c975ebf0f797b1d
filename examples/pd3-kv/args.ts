// args.ts — reading command arguments: option words (case-insensitive), integer arguments, and
// the expiry options shared by SET, GETEX and the EXPIRE family.
import { MAX_ADDRESS } from './key-index.js';
import { parseSafeInteger } from './numbers.js';
import { ReplyError } from './reply-error.js';

/** The error of an argument that is not an integer. */
export const NOT_INTEGER = 'ERR value is not an integer or out of range';
/** Latest expiry time accepted (ms since the epoch): beyond it the arithmetic would lose precision. */
const MAX_EXPIRE_MS = MAX_ADDRESS;

/** Whether `arg` is the word `upper` (given in upper case), in any letter case. */
export function isWord(arg: Uint8Array, upper: string): boolean {
  if (arg.length !== upper.length) return false;
  for (let i = 0; i < arg.length; ++i) {
    const c = arg[i]!;
    const u = c >= 0x61 && c <= 0x7a ? c - 0x20 : c;
    if (u !== upper.charCodeAt(i)) return false;
  }
  return true;
}

/** An integer argument; throws the "not an integer" reply. */
export function integerArg(arg: Uint8Array): number {
  const v = parseSafeInteger(arg);
  if (v === null) throw new ReplyError(NOT_INTEGER);
  return v;
}

/** Unit and reference of an expiry option. */
export type ExpireUnit = 'EX' | 'PX' | 'EXAT' | 'PXAT';

/** The absolute expiry time (ms since the epoch) an option gives, for command `name`. Redis refuses
 *  a non-positive time in SET/GETEX (`positiveOnly`) but lets EXPIRE set one in the past. */
export function expireAt(unit: ExpireUnit, arg: Uint8Array, name: string, positiveOnly: boolean): number {
  const v = integerArg(arg);
  if (positiveOnly && v <= 0) throw new ReplyError(`ERR invalid expire time in '${name}' command`);
  const ms = unit === 'EX' || unit === 'EXAT' ? v * 1000 : v;
  const at = unit === 'EX' || unit === 'PX' ? Date.now() + ms : ms;
  if (!Number.isSafeInteger(at) || at > MAX_EXPIRE_MS || at < -MAX_EXPIRE_MS) {
    throw new ReplyError(`ERR invalid expire time in '${name}' command`);
  }
  return at;
}

/** The expiry unit `arg` names, or null. */
export function expireUnit(arg: Uint8Array): ExpireUnit | null {
  for (const u of ['EX', 'PX', 'EXAT', 'PXAT'] as const) if (isWord(arg, u)) return u;
  return null;
}
