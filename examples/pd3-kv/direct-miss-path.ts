// direct-miss-path.ts — the plain out-of-core path of modes sync, async and pd3-noprefetch: every
// miss is one remote read of the record (directly to the memory servers, or through the agent).
import type { MissPath } from './miss-path.js';
import { fetchRemoteRecord } from './remote-record.js';
import type { RemotePages } from './remote-pages.js';
import type { KvStats } from './stats.js';

/** Remote reads on every miss; `batched` selects the Redy-style batch-at-once execution. */
export class DirectMissPath implements MissPath {
  constructor(
    private readonly remote: RemotePages,
    private readonly stats: KvStats,
    readonly batched: boolean,
  ) {}

  immediate(): undefined {
    return undefined;
  }

  fetch(key: Buffer, address: number, length: number): Promise<Buffer | null> {
    return fetchRemoteRecord(this.remote, this.stats, address, length, key);
  }

  kick(): void {
    this.remote.kick();
  }
}
