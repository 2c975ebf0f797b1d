// kv-record.ts — parseRecord for the built-in record format of pd3/record.h (u32 key_len, u32
// value_len, key, value, back to back), read through the layout constants the addon exports.
import { constants } from '../native.js';
import type { RecordKey } from '../contract.js';

/** The keys of the records at the start of `bytes`, each with where its value and its record are.
 *  Stops, like pd3_kv_next, at a zero key length (the end marker), at a key longer than
 *  MAX_KEY_LEN, and at a record that does not fit: any bytes give a prefix of the records, never a
 *  read past the end. */
export function parseKvRecords(bytes: Uint8Array): RecordKey[] {
  const { SIZEOF_KV_HEADER, KV_KEY_LEN, KV_VALUE_LEN, MAX_KEY_LEN } = constants;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const records: RecordKey[] = [];
  let at = 0;
  while (bytes.length - at >= SIZEOF_KV_HEADER) {
    const keyLength = view.getUint32(at + KV_KEY_LEN, true);
    const valueLength = view.getUint32(at + KV_VALUE_LEN, true);
    if (keyLength === 0 || keyLength > MAX_KEY_LEN) break;
    const keyAt = at + SIZEOF_KV_HEADER;
    if (bytes.length - keyAt < keyLength + valueLength) break;
    const end = keyAt + keyLength + valueLength;
    records.push({
      key: bytes.slice(keyAt, keyAt + keyLength),
      offset: keyAt + keyLength,
      length: valueLength,
      recordOffset: at,
      recordLength: end - at,
    });
    at = end;
  }
  return records;
}
