// leap-pages.ts — mode leap: Leap's majority-trend prefetcher (workloads/leap.ts) over the ids
// of the pages that miss; the pages along the trend are read into the local cache.
import { LeapPrefetcher } from 'pd3/workloads';

/** What the store tells a host-side prefetcher, and what it is asked to read. */
export interface PagePrefetcher {
  /** A demand miss on `id`: returns the pages to prefetch. */
  miss(id: number): readonly number[];
  /** The first hit on a page this prefetcher brought in. */
  hit(id: number): void;
}

/** Leap over page ids. */
export class LeapPages implements PagePrefetcher {
  private readonly leap: LeapPrefetcher;

  constructor(pages: number, maxWindow: number) {
    this.leap = new LeapPrefetcher({ maxWindow, addressLimit: pages });
  }

  miss(id: number): readonly number[] {
    return this.leap.recordMiss(id).addresses;
  }

  hit(id: number): void {
    this.leap.recordHit(id);
  }
}
