// stats.ts — the page server's counters: answered by the Stats RPC and written in the "stats" log line at stop.

/** Counters since start (field names as in pages.proto's ServerStats, camelCase). */
export class PageServerStats {
  /** Pages asked for: GetPage calls and each id of GetPages. */
  gets = 0;
  /** PutPage calls that succeeded. */
  puts = 0;
  /** Pages served from the local cache. */
  localHits = 0;
  /** Pages served from an eviction write still in flight. */
  writebackHits = 0;
  /** Pages served by checkAndReturn from the Loading Zone (mode pd3). */
  zoneHits = 0;
  /** Cache hits on pages the Leap prefetcher brought in (mode leap; also counted in localHits). */
  leapHits = 0;
  /** Pages the Leap prefetcher read into the cache. */
  leapPrefetches = 0;
  /** Demand reads of a page from remote memory, and how many of them failed. */
  remoteReads = 0;
  remoteReadFailures = 0;
  /** Misses that joined a read of the same page already in flight. */
  coalescedMisses = 0;
  /** Pages evicted from the cache, and how many of them had been written. */
  evictions = 0;
  dirtyEvictions = 0;
  /** Eviction writes that completed, and writes issued again after a failure. */
  flushes = 0;
  flushRetries = 0;
  /** Batches of demand reads issued together (mode async). */
  readBatches = 0;
  /** Calls answered with INVALID_ARGUMENT or NOT_FOUND. */
  badRequests = 0;

  /** A plain copy, for logs and the Stats RPC. */
  snapshot(): PageServerCounters {
    const { ...counters } = this;
    return counters;
  }
}

/** The counters as plain data. */
export type PageServerCounters = Omit<PageServerStats, 'snapshot'>;
