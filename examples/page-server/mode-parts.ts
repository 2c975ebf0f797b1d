// mode-parts.ts — what each remote mode is made of: its miss path, whether it prefetches on the host,
// whether requests hold an application lane, and how GetPages reads its pages.
import { zoneWaitFor, type Pd3Host } from 'pd3/host';
import { BatchedMissPath } from './batched-miss-path.js';
import { LeapPages, type PagePrefetcher } from './leap-pages.js';
import type { MissPath } from './miss-path.js';
import type { ResolvedOptions } from './options.js';
import type { RemotePages } from './remote-pages.js';
import type { PageServerStats } from './stats.js';
import { SyncMissPath } from './sync-miss-path.js';
import type { FlushObserver } from './write-back.js';
import { ZoneMissPath } from './zone-miss-path.js';

/** The mode-specific pieces of a remote page store. */
export interface ModeParts {
  missPath: MissPath;
  flushObserver: FlushObserver | null;
  prefetcher: PagePrefetcher | null;
  /** Requests hold a lane until answered (a synchronous application thread each). */
  blocking: boolean;
}

/** The pieces of `o.mode` (any mode but local). */
export function modeParts(o: ResolvedOptions, host: Pd3Host, remote: RemotePages, stats: PageServerStats): ModeParts {
  switch (o.mode) {
    case 'async':
      return { missPath: new BatchedMissPath(remote, stats, o.asyncBatch), flushObserver: null, prefetcher: null, blocking: false };
    case 'leap':
      return { missPath: new SyncMissPath(remote), flushObserver: null, prefetcher: new LeapPages(o.pages, o.leapWindow), blocking: true };
    case 'pd3': {
      const zone = new ZoneMissPath(host, remote, zoneWaitFor(o.zoneWaitUs));
      return { missPath: zone, flushObserver: zone, prefetcher: null, blocking: true };
    }
    case 'sync':
    case 'pd3-noprefetch':
      return { missPath: new SyncMissPath(remote), flushObserver: null, prefetcher: null, blocking: true };
    case 'local':
      throw new Error('mode local has no remote memory');
  }
}
