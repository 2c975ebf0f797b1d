// zone-wait.ts — how long an application keeps looking in the Loading Zone for an item the agent
// is probably fetching, before it reads the data itself: a fixed time, or one that follows how long
// items have been taking to land. The examples' --zone-wait-us N|auto.

/** The wait of the next miss (or batch of misses), and what the earlier ones saw. */
export interface ZoneWait {
  /** µs the next miss waits for its item before it is read. */
  readonly us: number;
  /** Items landed in the zone while a miss (or batch) waited or raced its reads, the last `us`
   *  after the wait began. Misses whose item was there at the first look, or never came, say
   *  nothing. */
  landed(us: number): void;
}

/** The wait a `--zone-wait-us N|auto` setting names: FixedZoneWait(N), or AdaptiveZoneWait. */
export function zoneWaitFor(setting: number | 'auto'): ZoneWait {
  return setting === 'auto' ? new AdaptiveZoneWait() : new FixedZoneWait(setting);
}

/** The same wait every time (--zone-wait-us N). */
export class FixedZoneWait implements ZoneWait {
  constructor(readonly us: number) {}
  landed(): void {}
}

/**
 * Twice the recent time for items to land, within [MIN_US, MAX_US]: long enough that the items
 * that are coming usually arrive before their reads go out, so the memory server does not serve
 * them twice, and no longer. Where the prefetches come from a tiered memory server (about
 * a millisecond) it grows to a few; in DRAM (tens of µs) it stays near its floor. A miss whose
 * prefetch never comes pays the whole wait, which MAX_US bounds.
 */
export class AdaptiveZoneWait implements ZoneWait {
  static readonly MIN_US = 100;
  static readonly MAX_US = 5000;
  /** Weight of one report in the running mean: after a change the mean is within 1% of the new
   *  time in some 35 reports (from the ceiling back to a few hundred µs, some 70). */
  static readonly WEIGHT = 1 / 8;
  private meanUs = AdaptiveZoneWait.MIN_US / 2;

  get us(): number {
    return Math.min(AdaptiveZoneWait.MAX_US, Math.max(AdaptiveZoneWait.MIN_US, Math.round(2 * this.meanUs)));
  }

  landed(us: number): void {
    this.meanUs += (Math.min(us, AdaptiveZoneWait.MAX_US) - this.meanUs) * AdaptiveZoneWait.WEIGHT;
  }
}
