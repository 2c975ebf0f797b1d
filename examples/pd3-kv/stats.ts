// stats.ts — pd3-kv's counters, reported by INFO (sections "stats" and "pd3kv").

/** Counters of one pd3-kv server, since start or the last CONFIG RESETSTAT. */
export class KvStats {
  /** Commands executed (queued MULTI commands count when EXEC runs them). */
  commands = 0;
  connectionsReceived = 0;
  /** Bytes read from client sockets (Redis: total_net_input_bytes). */
  netInputBytes = 0;
  /** Reads of a key that exists / does not. */
  keyspaceHits = 0;
  keyspaceMisses = 0;
  expiredKeys = 0;
  /** Records read from a page in local memory. */
  localHits = 0;
  /** Records of flushed pages served by checkAndReturn from the Loading Zone (pd3 mode). */
  zoneHits = 0;
  /** Records of flushed pages served from the Leap page cache (leap mode). */
  leapHits = 0;
  /** Pages the Leap prefetcher read into its cache. */
  leapPrefetches = 0;
  /** Records read from remote memory on the out-of-core path. */
  remoteReads = 0;
  /** Microseconds those reads took, issue to answer, summed (÷ remoteReads: the mean latency of
   *  the mode's out-of-core path as the app sees it, under the load it runs at). */
  remoteReadMicros = 0;
  /** Remote reads whose record the Loading Zone supplied first (pd3 mode): issued, not used.
   *  remoteReads less these are the reads that served a command. */
  readsOvertaken = 0;
  /** Remote reads that failed (the command got an error reply). */
  remoteReadFailures = 0;
  /** Remote records whose key differed from the one looked up (a 64-bit hash collision). */
  indexCollisions = 0;
  /** Page writes issued, failed, and pages made durable and dropped locally. */
  flushWrites = 0;
  flushFailures = 0;
  flushedPages = 0;
  /** Tombstones appended (DEL, UNLINK, GETDEL, expiry). */
  tombstones = 0;

  /** Zeroes every counter (CONFIG RESETSTAT). */
  reset(): void {
    Object.assign(this, new KvStats());
  }
}
