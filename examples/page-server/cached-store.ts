// cached-store.ts — the remote modes' pages: a local cache in front of remote memory. A read looks in
// the cache, then in the write-back (evicted pages whose write is in flight), then asks the mode's
// miss path (a Loading Zone item, else a remote read). Every page that leaves the cache is written
// back. A write replaces the page in the cache and marks it dirty.
import type { PagePrefetcher } from './leap-pages.js';
import type { MissPath } from './miss-path.js';
import type { PageStore } from './page-store.js';
import { PageCache, type InsertMode } from './page-cache.js';
import type { PageServerStats } from './stats.js';
import type { WriteBack } from './write-back.js';

// A remote read of a page in flight, shared by every miss on the page while it lasts.
interface Fetch {
  promise: Promise<Buffer>;
  /** A write of the page came after the read was issued: its answer may be older, so it is neither
   *  cached nor joined by later misses. */
  superseded: boolean;
}

const CLEAN: InsertMode = { dirty: false, prefetched: false };
const WRITTEN: InsertMode = { dirty: true, prefetched: false };
const PREFETCHED: InsertMode = { dirty: false, prefetched: true };

/** Cache + write-back + miss path. */
export class CachedPageStore implements PageStore {
  private readonly cache: PageCache;
  private readonly fetching = new Map<number, Fetch>();

  constructor(
    cachePages: number,
    private readonly writeBack: WriteBack,
    private readonly missPath: MissPath,
    private readonly prefetcher: PagePrefetcher | null,
    private readonly stats: PageServerStats,
  ) {
    this.cache = new PageCache(cachePages);
  }

  get(id: number): Buffer | Promise<Buffer> {
    const cached = this.cache.get(id);
    if (cached !== undefined) {
      this.stats.localHits++;
      if (this.prefetcher !== null && this.cache.takePrefetchMark(id)) {
        this.stats.leapHits++;
        this.prefetcher.hit(id);
      }
      return Buffer.from(cached);
    }
    const writing = this.writeBack.page(id);
    if (writing !== undefined) {
      this.stats.writebackHits++;
      return Buffer.from(writing);
    }
    const inflight = this.fetching.get(id);
    if (inflight !== undefined && !inflight.superseded) {
      this.stats.coalescedMisses++;
      return inflight.promise.then((page) => Buffer.from(page));
    }
    const zone = this.missPath.immediate(id);
    if (zone !== undefined) {
      this.stats.zoneHits++;
      this.install(id, zone, CLEAN);
      return zone;
    }
    if (this.prefetcher !== null) {
      for (const candidate of this.prefetcher.miss(id)) this.prefetch(candidate);
    }
    return this.fetch(id, CLEAN, true).then(
      (page) => Buffer.from(page),
      (e: unknown) => {
        this.stats.remoteReadFailures++;
        throw e;
      },
    );
  }

  put(id: number, page: Uint8Array): void {
    const inflight = this.fetching.get(id);
    if (inflight !== undefined) inflight.superseded = true;
    if (!this.cache.overwrite(id, page)) this.install(id, page, WRITTEN);
  }

  async close(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
    await Promise.race([this.writeBack.idle(), deadline]);
    clearTimeout(timer);
    this.writeBack.close();
  }

  // Reads a page and caches it, unless a write came meanwhile. `demand`: a miss of a request, which
  // waits for the page's zone item first where the mode does (pd3).
  private fetch(id: number, mode: InsertMode, demand = false): Promise<Buffer> {
    const entry: Fetch = { promise: demand ? this.demandRead(id) : this.missPath.fetch(id), superseded: false };
    this.fetching.set(id, entry);
    const settle = (): void => {
      if (this.fetching.get(id) === entry) this.fetching.delete(id);
    };
    entry.promise.then(
      (page) => {
        settle();
        if (!entry.superseded && !this.cache.has(id) && this.writeBack.page(id) === undefined) this.install(id, page, mode);
      },
      settle,
    );
    return entry.promise;
  }

  // A demand miss: the mode's bounded wait for the zone item, then (without it) a remote read.
  private demandRead(id: number): Promise<Buffer> {
    const read = (): Promise<Buffer> => {
      this.stats.remoteReads++;
      return this.missPath.fetch(id);
    };
    const waited = this.missPath.awaitZone?.(id);
    if (waited === undefined) return read();
    return waited.then((page) => {
      if (page === undefined) return read();
      this.stats.zoneHits++;
      return page;
    });
  }

  // Leap's candidates: read into the cache unless already there or on the way.
  private prefetch(id: number): void {
    if (this.cache.has(id) || this.writeBack.page(id) !== undefined || this.fetching.has(id)) return;
    this.stats.leapPrefetches++;
    this.fetch(id, PREFETCHED).catch(() => {
      // A lost prefetch costs a later miss, nothing else.
    });
  }

  private install(id: number, page: Uint8Array, mode: InsertMode): void {
    const evicted = this.cache.insert(id, page, mode);
    if (evicted === null) return;
    this.stats.evictions++;
    if (evicted.dirty) this.stats.dirtyEvictions++;
    this.writeBack.flush(evicted.id, evicted.page);
  }
}
