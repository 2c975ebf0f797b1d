// host-view.ts — Host View from TS (tests and tools): the agent's sharded set of key hashes.
// The agent's prefetcher uses the native submit/complete API directly; this is the batch wrapper.
import { callNative } from '../common/errors.js';
import { addon, type NativeHostView, type NativeHostViewOptions } from './native.js';

export type HostViewOptions = NativeHostViewOptions;

/** What a Host View reports about itself. */
export interface HostViewInfo {
  /** Keys held. */
  size: number;
  /** Table bytes over all shards. */
  bytes: number;
  shards: number;
  /** SIMD path in use: avx2, sse4.1, neon or scalar. */
  simd: string;
  /** Pages backing the tables: hugetlb, thp or 4k. */
  pages: string;
}

/** The 64-bit hash Host View stores for a key. */
export function hostViewKeyHash(key: Uint8Array | string): bigint {
  return addon.hostViewKeyHash(typeof key === 'string' ? Buffer.from(key) : key);
}

/** A sharded Host View. Batches are given as keys or as key hashes; verdicts come back in order. */
export class HostView {
  private native: NativeHostView | null;

  constructor(options: HostViewOptions) {
    this.native = callNative(() => new addon.HostViewHandle(options));
  }

  /** 1 where the key is present. */
  lookup(keys: BigUint64Array | Array<Uint8Array | string>): Uint8Array {
    return this.handle().lookup(toHashes(keys));
  }

  /** 1 where the key was added or already present; 0 where the table had no room. */
  insert(keys: BigUint64Array | Array<Uint8Array | string>): Uint8Array {
    return this.handle().insert(toHashes(keys));
  }

  /** 1 where the key was present and is now removed. */
  erase(keys: BigUint64Array | Array<Uint8Array | string>): Uint8Array {
    return this.handle().erase(toHashes(keys));
  }

  info(): HostViewInfo {
    return this.handle().info();
  }

  /** Stops the shard threads and frees the tables. */
  close(): void {
    this.native?.close();
    this.native = null;
  }

  private handle(): NativeHostView {
    if (this.native === null) throw new Error('Host View closed');
    return this.native;
  }
}

function toHashes(keys: BigUint64Array | Array<Uint8Array | string>): BigUint64Array {
  if (keys instanceof BigUint64Array) return keys;
  const out = new BigUint64Array(keys.length);
  for (let i = 0; i < keys.length; ++i) out[i] = hostViewKeyHash(keys[i]!);
  return out;
}
