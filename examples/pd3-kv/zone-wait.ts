// zone-wait.ts — how long pd3 mode's batch of Loading Zone misses waits for the agent's prefetches
// before it reads them itself: a fixed time, or one that follows how long items have been taking to
// land (--zone-wait-us auto).

/** The wait of the next batch, and what the batches saw. */
export interface ZoneWait {
  /** µs the next batch's misses wait before they are read. */
  readonly us: number;
  /** A batch's items landed in the zone while it waited or raced its reads, the last `us` after
   *  the batch began (batches whose items were all there at once, or never came, say nothing). */
  landed(us: number): void;
}

/** The same wait for every batch (--zone-wait-us N). */
export class FixedZoneWait implements ZoneWait {
  constructor(readonly us: number) {}
  landed(): void {}
}

/**
 * Twice the recent time for a batch's items to land, within [MIN_US, MAX_US]: long enough that
 * the items that are coming usually arrive before their reads go out, so the memory server does
 * not serve them twice, and no longer. Where the prefetches come from a tiered memory server (about
 * a millisecond) it grows to a few; in DRAM (tens of µs) it stays near its floor. A miss whose
 * prefetch never comes pays the whole wait, which MAX_US bounds.
 */
export class AdaptiveZoneWait implements ZoneWait {
  static readonly MIN_US = 100;
  static readonly MAX_US = 5000;
  /** Weight of one batch in the running mean: after a change the mean is within 1% of the new time
   *  in some 35 batches (from the ceiling back to a few hundred µs, some 70). */
  static readonly WEIGHT = 1 / 8;
  private meanUs = AdaptiveZoneWait.MIN_US / 2;

  get us(): number {
    return Math.min(AdaptiveZoneWait.MAX_US, Math.max(AdaptiveZoneWait.MIN_US, Math.round(2 * this.meanUs)));
  }

  landed(us: number): void {
    this.meanUs += (Math.min(us, AdaptiveZoneWait.MAX_US) - this.meanUs) * AdaptiveZoneWait.WEIGHT;
  }
}
