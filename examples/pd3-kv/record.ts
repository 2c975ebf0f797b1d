// record.ts — pd3-kv's log records in the built-in record format of pd3/record.h
// (u32 key_len | u32 value_len | key | value, little-endian), the format the memory server indexes.
import { constants as C } from 'pd3/host';

/** Bytes of a record header. */
export const HEADER_BYTES = C.SIZEOF_KV_HEADER;
/** Longest key the format (and the memory server's index) takes. */
export const MAX_KEY_BYTES = C.MAX_KEY_LEN;
const KEY_LEN = C.KV_KEY_LEN;
const VALUE_LEN = C.KV_VALUE_LEN;

/** Bytes a record of this key and value takes in a page. */
export function recordBytes(keyBytes: number, valueBytes: number): number {
  return HEADER_BYTES + keyBytes + valueBytes;
}

/** Writes a record at `at` of `page` (the caller checked it fits); returns its length. A delete is
 *  written as a record with an empty value (a tombstone; see README "Deletes"). */
export function writeRecord(page: Buffer, at: number, key: Uint8Array, value: Uint8Array): number {
  page.writeUInt32LE(key.length, at + KEY_LEN);
  page.writeUInt32LE(value.length, at + VALUE_LEN);
  page.set(key, at + HEADER_BYTES);
  page.set(value, at + HEADER_BYTES + key.length);
  return HEADER_BYTES + key.length + value.length;
}

/** Whether the record at `at` holds `key`. */
export function recordHasKey(page: Buffer, at: number, key: Uint8Array): boolean {
  const n = page.readUInt32LE(at + KEY_LEN);
  if (n !== key.length) return false;
  const from = at + HEADER_BYTES;
  for (let i = 0; i < n; ++i) if (page[from + i] !== key[i]) return false;
  return true;
}

/** The value of the record at `at` (a view into `page`, which never changes under it). */
export function recordValue(page: Buffer, at: number): Buffer {
  const from = at + HEADER_BYTES + page.readUInt32LE(at + KEY_LEN);
  return page.subarray(from, from + page.readUInt32LE(at + VALUE_LEN));
}

/** The header fields of a record read from remote memory, or null if fewer than a header. */
export function recordHeader(bytes: Buffer): { keyLen: number; valueLen: number } | null {
  if (bytes.length < HEADER_BYTES) return null;
  return { keyLen: bytes.readUInt32LE(KEY_LEN), valueLen: bytes.readUInt32LE(VALUE_LEN) };
}
