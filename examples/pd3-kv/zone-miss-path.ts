// zone-miss-path.ts — full PD3 (mode pd3): checkAndReturn first, the out-of-core path only when the
// agent's prefetch has not brought the key into the Loading Zone.
import type { Pd3Host } from 'pd3/host';
import type { MissPath } from './miss-path.js';
import { fetchRemoteRecord } from './remote-record.js';
import type { RemotePages } from './remote-pages.js';
import type { KvStats } from './stats.js';

/**
 * Why a Loading Zone item is the value pd3-kv wants: immediate() is only asked about a key whose
 * newest record (per the local index) is in a page that is durable and dropped. That page was the
 * last write holding the key (pages go out in order, see flusher.ts), the agent invalidated the
 * key's items when it took that write, and prefetches it sends afterwards read the server's copy
 * behind that write. So an item present now carries that record's value (docs/prefetcher.md).
 */
export class ZoneMissPath implements MissPath {
  readonly batched = false;
  private readonly dest: Buffer;

  constructor(
    private readonly host: Pd3Host,
    private readonly remote: RemotePages,
    private readonly stats: KvStats,
  ) {
    this.dest = Buffer.allocUnsafe(remote.pageSize); // a record, hence its value, fits in a page
  }

  immediate(key: Buffer): Buffer | undefined {
    const n = this.host.checkAndReturn(key, this.dest);
    if (n <= 0) return undefined; // a miss, or an item too big for dest (then read it remotely)
    this.stats.zoneHits++;
    return Buffer.from(this.dest.subarray(0, n));
  }

  fetch(key: Buffer, address: number, length: number): Promise<Buffer | null> {
    return fetchRemoteRecord(this.remote, this.stats, address, length, key);
  }

  kick(): void {
    this.remote.kick();
  }
}
