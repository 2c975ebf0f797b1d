// tenant-record.ts — the pool's tenant records in etcd: a client's lease record (a tenant is alive
// while any of its clients holds one) and the name → region records of named regions. Only
// TypeScript reads or writes them, so this file is their one definition. docs/pool.md.
import { PoolRecordError } from './pool-record.js';

/** Version of the region-name record this code writes; a reader refuses any other. */
export const REGION_NAME_RECORD_VERSION = 1;

/** Longest tenant name (PD3_TENANT_MAX in pd3/transport.h, checked against it in a test). */
export const TENANT_NAME_MAX = 64;
/** Longest region name. */
export const REGION_NAME_MAX = 200;

const TENANT_NAME = /^[A-Za-z0-9._-]+$/;

/** Checks a tenant name: 1..64 of [A-Za-z0-9._-] (pd3/transport.h). Returns it; throws Error. */
export function checkTenantName(name: string): string {
  if (name.length === 0 || name.length > TENANT_NAME_MAX || !TENANT_NAME.test(name)) {
    throw new Error(`a tenant name is 1 to ${TENANT_NAME_MAX} characters of A-Z a-z 0-9 . _ -, got ${JSON.stringify(name)}`);
  }
  return name;
}

/** Checks a region name: 1..200 of [A-Za-z0-9._-]. Returns it; throws Error. */
export function checkRegionName(name: string): string {
  if (name.length === 0 || name.length > REGION_NAME_MAX || !TENANT_NAME.test(name)) {
    throw new Error(`a region name is 1 to ${REGION_NAME_MAX} characters of A-Z a-z 0-9 . _ -, got ${JSON.stringify(name)}`);
  }
  return name;
}

function base(prefix: string): string {
  return prefix === '/' ? '' : prefix;
}

/** The folder of every client lease record. */
export function tenantsPrefix(prefix: string): string {
  return `${base(prefix)}/tenants/`;
}

/** The key a client of `tenant` keeps under its lease while it lives. */
export function tenantLeaseKey(prefix: string, tenant: string, clientId: string): string {
  return `${tenantsPrefix(prefix)}${tenant}/${clientId}`;
}

/** The value of a client's lease record: who holds it (its presence is what counts). */
export function encodeTenantLeaseRecord(host: string, pid = process.pid, startedMs = Date.now()): string {
  return JSON.stringify({ v: 1, pid, host, startedMs });
}

/** The tenant a key under tenantsPrefix names, or null (a key that is not a lease record). */
export function tenantOfLeaseKey(prefix: string, key: string): string | null {
  const folder = tenantsPrefix(prefix);
  if (!key.startsWith(folder)) return null;
  const [tenant, client, ...rest] = key.slice(folder.length).split('/');
  if (rest.length !== 0 || !client || tenant === undefined) return null;
  return tenant.length <= TENANT_NAME_MAX && TENANT_NAME.test(tenant) ? tenant : null;
}

/** The folder of every tenant's region-name records. */
export function regionsPrefix(prefix: string): string {
  return `${base(prefix)}/regions/`;
}

/** The tenant a key under regionsPrefix names (PREFIX/regions/TENANT/NAME), or null. */
export function tenantOfRegionNameKey(prefix: string, key: string): string | null {
  const folder = regionsPrefix(prefix);
  if (!key.startsWith(folder)) return null;
  const [tenant, name, ...rest] = key.slice(folder.length).split('/');
  if (rest.length !== 0 || !name || tenant === undefined) return null;
  return tenant.length <= TENANT_NAME_MAX && TENANT_NAME.test(tenant) ? tenant : null;
}

/** The folder of `tenant`'s region-name records. */
export function regionNamesPrefix(prefix: string, tenant: string): string {
  return `${regionsPrefix(prefix)}${tenant}/`;
}

/** The key of `tenant`'s region called `name`. */
export function regionNameKey(prefix: string, tenant: string, name: string): string {
  return `${regionNamesPrefix(prefix, tenant)}${name}`;
}

/** Where a named region lives. Written once when the region is created; deleted when the memory
 *  server reclaims it. */
export interface RegionNameRecord {
  readonly v: number;
  /** The global region id (it names its memory server). */
  readonly region: number;
  /** Bytes in the region. */
  readonly capacity: number;
}

/** The record's JSON text. */
export function encodeRegionNameRecord(r: Omit<RegionNameRecord, 'v'>): string {
  return JSON.stringify({ v: REGION_NAME_RECORD_VERSION, region: r.region, capacity: r.capacity });
}

/** The region-name record stored at `key`. Throws PoolRecordError naming what is wrong. */
export function parseRegionNameRecord(key: string, text: string): RegionNameRecord {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new PoolRecordError(key, 'not JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new PoolRecordError(key, 'not a JSON object');
  const o = value as Record<string, unknown>;
  if (o.v !== REGION_NAME_RECORD_VERSION) {
    throw new PoolRecordError(key, `record version ${JSON.stringify(o.v)}, this build reads ${REGION_NAME_RECORD_VERSION}`);
  }
  const whole = (field: string): number => {
    const n = o[field];
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 0xffff_ffff) {
      throw new PoolRecordError(key, `${field} must be a whole number from 1 to 2^32-1, got ${JSON.stringify(n) ?? 'nothing'}`);
    }
    return n;
  };
  return { v: REGION_NAME_RECORD_VERSION, region: whole('region'), capacity: whole('capacity') };
}
