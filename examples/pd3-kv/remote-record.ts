// remote-record.ts — the out-of-core path: one record read from remote memory at its log address.
import { performance } from 'node:perf_hooks';
import { HEADER_BYTES, recordHeader } from './record.js';
import type { RemotePages } from './remote-pages.js';
import type { KvStats } from './stats.js';

/** readRemoteRecord, counted in `stats` (remoteReads) and timed (remoteReadMicros): every mode's
 *  out-of-core read goes through here, so their latencies compare. */
export function fetchRemoteRecord(remote: RemotePages, stats: KvStats, address: number, length: number, key: Uint8Array): Promise<Buffer | null> {
  stats.remoteReads++;
  const start = performance.now();
  const done = (): void => {
    stats.remoteReadMicros += (performance.now() - start) * 1000;
  };
  const read = readRemoteRecord(remote, address, length, key);
  read.then(done, done);
  return read;
}

/**
 * What the record at `address`, `length` bytes long, holds for `key`: its value, or null if it
 * holds another key (a hash collision in the index). Rejects with the transport's error, or a
 * RangeError when the bytes there are not that record (remote memory lost or overwritten).
 *
 * Exactly the record is read, no byte more: in the pd3 modes the agent parses every read response
 * for keys and marks them as held by the host in Host View (paper Table 2), so bytes of the next
 * record in the answer would stop prefetches of a key the host does not hold.
 */
export async function readRemoteRecord(remote: RemotePages, address: number, length: number, key: Uint8Array): Promise<Buffer | null> {
  const bytes = await remote.read(address, length);
  const h = recordHeader(bytes);
  if (h === null || h.keyLen === 0 || HEADER_BYTES + h.keyLen + h.valueLen !== bytes.length) {
    throw new RangeError(`log address ${address}: remote memory holds no ${length}-byte record there`);
  }
  if (h.keyLen !== key.length) return null;
  for (let i = 0; i < key.length; ++i) if (bytes[HEADER_BYTES + i] !== key[i]) return null;
  return bytes.subarray(HEADER_BYTES + h.keyLen);
}
