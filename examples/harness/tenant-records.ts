// tenant-records.ts — one tenant's records in remote memory for the isolation check: regions
// allocated through the host's agent (or direct mode) until they span the memory servers, and the
// tenant's values (tenant-values.ts) written into them as pd3/record.h key/value records, in pages
// dealt round-robin over the regions, so each server holds a share of the keys and indexes them.
import { setTimeout as sleep } from 'node:timers/promises';
import { constants as C, type AllocatedRegion, type Pd3Host } from 'pd3/host';
import { tenantKey, type TenantValues } from './tenant-values.js';

/** Where a key's value lies in remote memory. */
export interface ValueAddress {
  region: number;
  offset: number;
  length: number;
}

/** Where one tenant's records went. */
export interface TenantRecords {
  /** The regions, in allocation order. */
  regions: AllocatedRegion[];
  /** The value of key number i is at `where[i]`. */
  where: ValueAddress[];
  /** Distinct memory servers holding the regions. */
  servers: number;
  /** Bytes of records written. */
  bytes: number;
}

/** How the records are laid out. */
export interface RecordLayout {
  /** Regions to allocate at least. */
  regions: number;
  /** Memory servers the regions should span: more are allocated (up to 4× `regions`) until they do. */
  servers: number;
  /** Largest write, in bytes (whole records only: a server indexes the records of a write). */
  pageBytes?: number;
  /** How long the first allocation may take to succeed (the agent may still be connecting). */
  connectMs?: number;
}

/** One record in the built-in format (pd3/record.h): header, key, value. */
export function kvRecord(key: string, value: string): Buffer {
  const k = Buffer.from(key);
  const v = Buffer.from(value);
  const h = Buffer.alloc(C.SIZEOF_KV_HEADER);
  h.writeUInt32LE(k.length, C.KV_KEY_LEN);
  h.writeUInt32LE(v.length, C.KV_VALUE_LEN);
  return Buffer.concat([h, k, v]);
}

/** The memory server a global region id names. */
export function serverOf(region: number): number {
  return region >>> C.REGION_LOCAL_BITS;
}

/** Allocates the regions and writes every value of `values` into them. Rejects with the host's
 *  error (e.g. PD3_E_FORBIDDEN, PD3_E_AUTH) or when the first allocation never succeeds. */
export async function writeTenantRecords(host: Pd3Host, values: TenantValues, layout: RecordLayout): Promise<TenantRecords> {
  const pageBytes = layout.pageBytes ?? 16 << 10;
  // Pages of whole records, each dealt to the next region in turn.
  const pages: Array<{ records: Buffer[]; bytes: number; keys: number[] }> = [];
  let page = { records: [] as Buffer[], bytes: 0, keys: [] as number[] };
  for (let i = 0; i < values.count; i++) {
    const record = kvRecord(tenantKey(i), values.value(i));
    if (page.bytes + record.length > pageBytes && page.records.length > 0) {
      pages.push(page);
      page = { records: [], bytes: 0, keys: [] };
    }
    page.records.push(record);
    page.bytes += record.length;
    page.keys.push(i);
  }
  if (page.records.length > 0) pages.push(page);

  const regions = await allocateSpread(host, layout, pageBytes, pages.length);
  const next = regions.map(() => 0); // next free offset of each region
  const where: ValueAddress[] = new Array<ValueAddress>(values.count);
  const writes: Array<{ region: number; offset: number; data: Buffer }> = [];
  pages.forEach((p, n) => {
    const r = n % regions.length;
    const region = regions[r]!.region;
    let offset = next[r]!;
    writes.push({ region, offset, data: Buffer.concat(p.records) });
    p.records.forEach((record, j) => {
      const key = Buffer.byteLength(tenantKey(p.keys[j]!));
      where[p.keys[j]!] = { region, offset: offset + C.SIZEOF_KV_HEADER + key, length: record.length - C.SIZEOF_KV_HEADER - key };
      offset += record.length;
    });
    next[r] = offset;
  });
  // A few writes in flight at once: enough to overlap round trips, few enough for the request ring.
  for (let at = 0; at < writes.length; at += 8) {
    await Promise.all(writes.slice(at, at + 8).map((w) => host.write(w.region, w.offset, w.data)));
  }
  return {
    regions,
    where,
    servers: new Set(regions.map((r) => serverOf(r.region))).size,
    bytes: writes.reduce((sum, w) => sum + w.data.length, 0),
  };
}

// Regions big enough for their share of the pages, allocated until there are `layout.regions` of
// them and they span `layout.servers` servers (or 4× as many were allocated).
async function allocateSpread(host: Pd3Host, layout: RecordLayout, pageBytes: number, pages: number): Promise<AllocatedRegion[]> {
  const regions: AllocatedRegion[] = [];
  const servers = new Set<number>();
  const need = layout.regions;
  // Sized for `need` regions; more regions only make each one's share smaller.
  const bytes = Math.ceil(pages / need) * pageBytes;
  regions.push(await firstAllocation(host, bytes, layout.connectMs ?? 10_000));
  servers.add(serverOf(regions[0]!.region));
  while (regions.length < need || (servers.size < layout.servers && regions.length < 4 * need)) {
    // Past `need`, a server may still be connecting: give it a moment before the next try.
    if (regions.length >= need) await sleep(50);
    const r = await host.allocate(bytes);
    regions.push(r);
    servers.add(serverOf(r.region));
  }
  return regions;
}

// The first allocation, retried while the agent is still connecting to the servers.
async function firstAllocation(host: Pd3Host, bytes: number, ms: number): Promise<AllocatedRegion> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await host.allocate(bytes);
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await sleep(50);
    }
  }
}
