// leap-miss-path.ts — the Leap baseline (mode leap): synchronous remote reads on a miss, plus a
// host-side prefetcher that runs Leap's majority-trend detection over the log page numbers of the
// misses and reads the pages along the trend into a local page cache.
import { LeapPrefetcher } from 'pd3/workloads';
import { recordHasKey, recordValue } from './record.js';
import type { MissPath } from './miss-path.js';
import { fetchRemoteRecord } from './remote-record.js';
import type { RemotePages } from './remote-pages.js';
import type { KvStats } from './stats.js';

/** Misses served from prefetched pages, else fetched like sync mode while pages along the trend
 *  are read in the background. */
export class LeapMissPath implements MissPath {
  readonly batched = false;
  private readonly leap = new LeapPrefetcher();
  private readonly cache = new Map<number, Buffer>(); // page → bytes, least recently used first
  private readonly reading = new Set<number>();

  /** `isRemote(page)`: the page is durable and no longer local (only those are worth reading). */
  constructor(
    private readonly remote: RemotePages,
    private readonly stats: KvStats,
    private readonly cachePages: number,
    private readonly isRemote: (page: number) => boolean,
  ) {}

  immediate(key: Buffer, address: number): Buffer | undefined {
    const page = Math.floor(address / this.remote.pageSize);
    const bytes = this.cache.get(page);
    if (bytes === undefined) return undefined;
    const at = address - page * this.remote.pageSize;
    if (!recordHasKey(bytes, at, key)) return undefined; // not this key: let the remote read decide
    this.cache.delete(page); // most recently used goes last
    this.cache.set(page, bytes);
    this.leap.recordHit(page);
    this.stats.leapHits++;
    return recordValue(bytes, at);
  }

  fetch(key: Buffer, address: number, length: number): Promise<Buffer | null> {
    const page = Math.floor(address / this.remote.pageSize);
    for (const candidate of this.leap.recordMiss(page).addresses) this.prefetch(candidate);
    return fetchRemoteRecord(this.remote, this.stats, address, length, key);
  }

  kick(): void {
    this.remote.kick();
  }

  private prefetch(page: number): void {
    if (this.cache.has(page) || this.reading.has(page) || !this.isRemote(page)) return;
    this.reading.add(page);
    this.stats.leapPrefetches++;
    this.remote.read(page * this.remote.pageSize, this.remote.pageSize).then(
      (bytes) => {
        this.reading.delete(page);
        this.cache.set(page, bytes);
        while (this.cache.size > this.cachePages) this.cache.delete(this.cache.keys().next().value!);
      },
      () => this.reading.delete(page), // a lost prefetch costs a later miss, nothing else
    );
  }
}
