// page-record.ts — how a page sits in remote memory: one record of the built-in format
// (pd3/record.h: u32 key_len | u32 value_len | key | value) per page, key = the page id's decimal
// digits, value = the 4096 page bytes, in a fixed-size slot per page.
import { constants as C } from 'pd3/host';
import { PAGE_SIZE } from './page-content.js';

// The longest key: a 64-bit id has at most 20 decimal digits.
const MAX_KEY_DIGITS = 20;
/** Bytes reserved per page in remote memory: the longest record, rounded up to a cache line. */
export const SLOT_BYTES = Math.ceil((C.SIZEOF_KV_HEADER + MAX_KEY_DIGITS + PAGE_SIZE) / 64) * 64;

/**
 * The page's key: its id in decimal ASCII ("42"). PD3's gRPC parser emits an integer key field
 * (pages.proto's fixed64 ids) as exactly these digits, so the agent's prefetch key and the memory
 * server's index key are the same bytes.
 */
export function pageKey(id: number): Buffer {
  return Buffer.from(String(id), 'latin1');
}

/** Length of the page's record (header, key, page). */
export function recordLength(id: number): number {
  return C.SIZEOF_KV_HEADER + String(id).length + PAGE_SIZE;
}

/** The record of page `id` holding `page` (PAGE_SIZE bytes). */
export function encodePageRecord(id: number, page: Uint8Array): Buffer {
  const key = String(id);
  const record = Buffer.allocUnsafe(C.SIZEOF_KV_HEADER + key.length + PAGE_SIZE);
  record.fill(0, 0, C.SIZEOF_KV_HEADER);
  record.writeUInt32LE(key.length, C.KV_KEY_LEN);
  record.writeUInt32LE(PAGE_SIZE, C.KV_VALUE_LEN);
  record.write(key, C.SIZEOF_KV_HEADER, 'latin1');
  record.set(page.subarray(0, PAGE_SIZE), C.SIZEOF_KV_HEADER + key.length);
  return record;
}

/** The page bytes inside `record`, a view (no copy): null unless it is page `id`'s record. */
export function pageOfRecord(id: number, record: Buffer): Buffer | null {
  const key = String(id);
  const headerEnd = C.SIZEOF_KV_HEADER;
  if (record.length !== headerEnd + key.length + PAGE_SIZE) return null;
  if (record.readUInt32LE(C.KV_KEY_LEN) !== key.length || record.readUInt32LE(C.KV_VALUE_LEN) !== PAGE_SIZE) return null;
  if (record.toString('latin1', headerEnd, headerEnd + key.length) !== key) return null;
  return record.subarray(headerEnd + key.length);
}
