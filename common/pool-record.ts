// pool-record.ts — the memory pool's records in etcd: where they live (keys under a prefix) and
// what a memory server's membership record holds. Only TypeScript reads or writes them (etcd is
// reached through the npm etcd3 client), so this file is their one definition. docs/pool.md.
import { MAX_SERVER_ID, REGION_LOCAL_BITS } from './constants.js';

/** Every etcd call a deployable makes gives up after this long, so a dead endpoint never stalls it. */
export const ETCD_CALL_DEADLINE_MS = 3000;

/** Version of the membership record this code writes; a reader skips any other. */
export const MEMBER_RECORD_VERSION = 1;

/** The longest key prefix accepted (etcd takes far longer keys; this keeps logs readable). */
export const POOL_PREFIX_MAX_BYTES = 256;

/** The key prefix of a pool's records when none is given (--etcd-prefix, `prefix`). */
export const DEFAULT_POOL_PREFIX = '/pd3';

/** Largest whole number a record may carry: JSON numbers are exact below 2^53. */
const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/** The last part of a member key: a server id in decimal, without leading zeros. */
const MEMBER_ID = /^(0|[1-9]\d{0,9})$/;

/** A memory server as the pool sees it: written by the server under its lease, refreshed while
 *  it lives, gone when the lease ends. */
export interface MemberRecord {
  /** MEMBER_RECORD_VERSION. */
  readonly v: number;
  /** The server's id (the key's last part). */
  readonly serverId: number;
  /** "HOST:PORT" clients dial for the transport. */
  readonly address: string;
  /** Bytes it offers to regions in total. */
  readonly capacityBytes: number;
  /** Bytes of that not allocated to regions. */
  readonly freeBytes: number;
  /** What its machine could still give the pool: MemAvailable less the headroom. */
  readonly harvestableBytes: number;
  /** When the server started, ms since the epoch. */
  readonly startedMs: number;
  /** When this record was written, ms since the epoch. */
  readonly updatedMs: number;
  /** The server's load (memserver/heat.ts serverLoad: accesses per second, decayed); absent from
   *  servers that do not measure it. The pool's migrator compares servers by it. */
  readonly load?: number;
  /** Its hottest regions, hottest first (at most MAX_HOT_REGIONS); absent with `load`. */
  readonly hot?: readonly HotRegion[];
}

/** One hot region as a membership record lists it. */
export interface HotRegion {
  /** The global region id (its server bits are the record's serverId). */
  readonly region: number;
  /** Its accesses per second (decayed). */
  readonly rate: number;
}

/** Most hot regions one membership record lists. */
export const MAX_HOT_REGIONS = 8;

/** Largest load or rate a record may carry (accesses per second): far above any real server, low
 *  enough that sums of them stay exact. */
export const MAX_LOAD = 1e12;

/** A record in etcd that is not what its key says it is. */
export class PoolRecordError extends Error {
  constructor(
    readonly key: string,
    reason: string,
  ) {
    super(`${key}: ${reason}`);
    this.name = 'PoolRecordError';
  }
}

/** Checks a key prefix ("/pd3"): absolute, no trailing slash, printable ASCII without spaces.
 *  Returns it; throws Error saying what is wrong. */
export function checkPoolPrefix(prefix: string): string {
  if (!prefix.startsWith('/')) throw new Error(`must start with "/", got "${prefix}"`);
  if (prefix.length > 1 && prefix.endsWith('/')) throw new Error(`must not end with "/", got "${prefix}"`);
  if (!/^[\x21-\x7e]+$/.test(prefix)) throw new Error(`must be printable ASCII without spaces, got ${JSON.stringify(prefix)}`);
  if (Buffer.byteLength(prefix) > POOL_PREFIX_MAX_BYTES) throw new Error(`must be at most ${POOL_PREFIX_MAX_BYTES} bytes`);
  return prefix;
}

/** The folder of every membership record under `prefix`, with its trailing slash. */
export function membersPrefix(prefix: string): string {
  return `${prefix === '/' ? '' : prefix}/members/`;
}

/** The key of server `serverId`'s membership record. One key per id: a second server claiming a
 *  live id is refused (pool-member.ts), so an id names one server at a time. */
export function memberKey(prefix: string, serverId: number): string {
  return `${membersPrefix(prefix)}${serverId}`;
}

/** The server id a key under `membersPrefix(prefix)` names, or null if it names none. */
export function memberIdOfKey(prefix: string, key: string): number | null {
  const folder = membersPrefix(prefix);
  if (!key.startsWith(folder) || !MEMBER_ID.test(key.slice(folder.length))) return null;
  const id = Number(key.slice(folder.length));
  return id <= 0xffff_ffff ? id : null;
}

/** The record's JSON text. */
export function encodeMemberRecord(r: MemberRecord): string {
  return JSON.stringify({
    v: r.v,
    serverId: r.serverId,
    address: r.address,
    capacityBytes: r.capacityBytes,
    freeBytes: r.freeBytes,
    harvestableBytes: r.harvestableBytes,
    startedMs: r.startedMs,
    updatedMs: r.updatedMs,
    ...(r.load === undefined ? {} : { load: r.load, hot: r.hot ?? [] }),
  });
}

/** The membership record stored at `key` under `prefix`. Throws PoolRecordError naming what is
 *  wrong: a key outside the members folder, text that is not a JSON object, another version, a
 *  missing or out-of-range field, a server id other than the key's. */
export function parseMemberRecord(prefix: string, key: string, text: string): MemberRecord {
  const folder = membersPrefix(prefix);
  if (!key.startsWith(folder)) throw new PoolRecordError(key, `not under ${folder}`);
  const idText = key.slice(folder.length);
  if (!MEMBER_ID.test(idText)) throw new PoolRecordError(key, 'the key does not end in a server id');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new PoolRecordError(key, `not JSON: ${preview(text)}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new PoolRecordError(key, 'not a JSON object');
  }
  const o = value as Record<string, unknown>;
  if (o.v !== MEMBER_RECORD_VERSION) {
    throw new PoolRecordError(key, `record version ${JSON.stringify(o.v)}, this build reads ${MEMBER_RECORD_VERSION}`);
  }
  const whole = (field: string, max = MAX_SAFE): number => {
    const n = o[field];
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > max) {
      throw new PoolRecordError(key, `${field} must be a whole number from 0 to ${max}, got ${preview(JSON.stringify(n) ?? 'nothing')}`);
    }
    return n;
  };
  const serverId = whole('serverId', MAX_SERVER_ID);
  if (String(serverId) !== idText) throw new PoolRecordError(key, `serverId ${serverId} is not the key's ${idText}`);
  const address = o.address;
  if (typeof address !== 'string' || !/^[A-Za-z0-9.-]{1,253}:\d{1,5}$/.test(address) || Number(address.split(':')[1]) > 65535) {
    throw new PoolRecordError(key, `address must be "HOST:PORT", got ${preview(JSON.stringify(address) ?? 'nothing')}`);
  }
  const record: MemberRecord = {
    v: MEMBER_RECORD_VERSION,
    serverId,
    address,
    capacityBytes: whole('capacityBytes'),
    freeBytes: whole('freeBytes'),
    harvestableBytes: whole('harvestableBytes'),
    startedMs: whole('startedMs'),
    updatedMs: whole('updatedMs'),
  };
  if (record.freeBytes > record.capacityBytes) {
    throw new PoolRecordError(key, `freeBytes ${record.freeBytes} exceeds capacityBytes ${record.capacityBytes}`);
  }
  if (o.load === undefined && o.hot === undefined) return record;
  return { ...record, ...parseHeat(key, serverId, o.load, o.hot) };
}

// The load and hot regions of a record: both or neither.
function parseHeat(key: string, serverId: number, load: unknown, hot: unknown): { load: number; hot: HotRegion[] } {
  const rate = (n: unknown, what: string): number => {
    if (typeof n !== 'number' || !Number.isFinite(n) || n < 0 || n > MAX_LOAD) {
      throw new PoolRecordError(key, `${what} must be a number from 0 to ${MAX_LOAD}, got ${preview(JSON.stringify(n) ?? 'nothing')}`);
    }
    return n;
  };
  const total = rate(load, 'load');
  if (!Array.isArray(hot) || hot.length > MAX_HOT_REGIONS) {
    throw new PoolRecordError(key, `hot must be a list of at most ${MAX_HOT_REGIONS} regions, got ${preview(JSON.stringify(hot) ?? 'nothing')}`);
  }
  const regions = hot.map((h: unknown, i): HotRegion => {
    if (typeof h !== 'object' || h === null || Array.isArray(h)) throw new PoolRecordError(key, `hot[${i}] is not an object`);
    const e = h as Record<string, unknown>;
    const region = e.region;
    if (typeof region !== 'number' || !Number.isInteger(region) || region < 1 || region > 0xffff_ffff || region >>> REGION_LOCAL_BITS !== serverId) {
      throw new PoolRecordError(key, `hot[${i}].region must be a region id of server ${serverId}, got ${preview(JSON.stringify(region) ?? 'nothing')}`);
    }
    return { region, rate: rate(e.rate, `hot[${i}].rate`) };
  });
  return { load: total, hot: regions };
}

// The start of a bad value, for an error message that stays one line.
function preview(text: string): string {
  const oneLine = text.replace(/\s+/g, ' ');
  return oneLine.length > 60 ? `${oneLine.slice(0, 60)}…` : oneLine;
}
