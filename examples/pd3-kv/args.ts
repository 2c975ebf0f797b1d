// args.ts — reading command arguments: option words (case-insensitive), integer arguments, and
// the expiry options shared by SET, GETEX and the EXPIRE family.
import { parseInt64, parseSafeInteger } from './numbers.js';
import { ReplyError } from './reply-error.js';

/** The error of an argument that is not an integer. */
export const NOT_INTEGER = 'ERR value is not an integer or out of range';

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

const LLONG_MAX = 2n ** 63n - 1n;
const LLONG_MIN = -(2n ** 63n);

function invalidExpire(name: string): ReplyError {
  return new ReplyError(`ERR invalid expire time in '${name}' command`);
}

/** A signed 64-bit integer argument; throws the "not an integer" reply. */
export function int64Arg(arg: Uint8Array): bigint {
  const v = parseInt64(arg);
  if (v === null) throw new ReplyError(NOT_INTEGER);
  return v;
}

const isSeconds = (unit: ExpireUnit): boolean => unit === 'EX' || unit === 'EXAT';
const isRelative = (unit: ExpireUnit): boolean => unit === 'EX' || unit === 'PX';

/** The absolute expiry time (ms since the epoch) of SET, GETEX, SETEX or PSETEX (`name`), by Redis'
 *  getExpireMillisecondsOrReply: the value must be positive, and converting seconds to ms or
 *  adding the current time must not overflow 64 bits (Redis sees the wrap as a time <= 0). */
export function setExpireAt(unit: ExpireUnit, arg: Uint8Array, name: string): bigint {
  const v = int64Arg(arg);
  if (v <= 0n || (isSeconds(unit) && v > LLONG_MAX / 1000n)) throw invalidExpire(name);
  const at = (isSeconds(unit) ? v * 1000n : v) + (isRelative(unit) ? BigInt(Date.now()) : 0n);
  if (at > LLONG_MAX) throw invalidExpire(name);
  return at;
}

/** The absolute expiry time (ms since the epoch) of the EXPIRE family (`name`), by Redis'
 *  expireGenericCommand: any 64-bit value, times in the past included, as long as converting
 *  seconds to ms (bounds truncated toward zero, as C divides) and adding the base time do not
 *  overflow. */
export function expireCommandAt(unit: ExpireUnit, arg: Uint8Array, name: string): bigint {
  let v = int64Arg(arg);
  if (isSeconds(unit)) {
    if (v > LLONG_MAX / 1000n || v < LLONG_MIN / 1000n) throw invalidExpire(name);
    v *= 1000n;
  }
  const base = isRelative(unit) ? BigInt(Date.now()) : 0n;
  if (v > LLONG_MAX - base) throw invalidExpire(name);
  return v + base;
}

/** The expiry unit `arg` names, or null. */
export function expireUnit(arg: Uint8Array): ExpireUnit | null {
  for (const u of ['EX', 'PX', 'EXAT', 'PXAT'] as const) if (isWord(arg, u)) return u;
  return null;
}
