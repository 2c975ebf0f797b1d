// heat.ts — a memory server's heat: per-region access rates (READs + WRITEs + PREFETCH hits per
// second, exponentially decayed) from the native access counters, its SSD tier's miss rate, and the
// server's load, which the pool's migrator compares across servers (docs/pool.md "Moving hot regions").
import { MAX_HOT_REGIONS, MAX_LOAD, type HotRegion } from '../common/pool-record.js';

/** One region's access count as the native server reports it (NativeMemServer.regionHeat). */
export interface RegionAccesses {
  region: number;
  capacity: number;
  tenant: string;
  /** READs, WRITEs and PREFETCH hits served from it since it was allocated. */
  accesses: number;
  /** Its move state: only a region served as usual ("none") is a candidate to move. */
  move: 'none' | 'frozen' | 'sealed';
}

/** A region's decayed rate. */
export interface RegionRate {
  region: number;
  tenant: string;
  capacity: number;
  /** Accesses per second, decayed with HEAT_HALF_LIFE_MS. */
  rate: number;
  move: RegionAccesses['move'];
}

/** How long an access keeps half its weight in a rate: long enough that one busy second does not
 *  move a region, short enough that a region that cooled stops counting within seconds. */
export const HEAT_HALF_LIFE_MS = 3000;

/** What one SSD-tier miss weighs in a server's load, in accesses: a miss is a page read from the
 *  region's file (about 55 µs on this VM's disk, `bench tier-io`) on top of the access itself (a
 *  few µs from DRAM), so a server whose tier misses is hotter than its access count says. */
export const TIER_MISS_WEIGHT = 10;

/** The server's load from its regions' rates and its SSD tier's misses per second (0 without a
 *  tier): THE definition every record and every comparison uses. */
export function serverLoad(rates: Iterable<number>, tierMissRate = 0): number {
  let total = TIER_MISS_WEIGHT * tierMissRate;
  for (const r of rates) total += r;
  return Math.min(total, MAX_LOAD);
}

/** Turns samples of the access counters into decayed rates. Not thread-safe (one timer samples). */
export class HeatMeter {
  private readonly regions = new Map<number, { accesses: number; rate: number; last: RegionAccesses }>();
  private lastMs: number | null = null;
  private tierMisses: number | null = null;  // the tier's miss counter at the last sample
  private tierMissRate = 0;

  constructor(private readonly halfLifeMs = HEAT_HALF_LIFE_MS) {}

  /** Folds one sample of every region's counter, taken at `nowMs`, into the rates. A region gone
   *  from the sample is forgotten; a counter lower than before is a new region under a reused id.
   *  `tierMisses`: the SSD tier's miss counter (pd3_memserver_tier_misses_total), if it has one. */
  sample(counts: readonly RegionAccesses[], nowMs: number, tierMisses?: number): void {
    const dtMs = this.lastMs === null ? 0 : Math.max(0, nowMs - this.lastMs);
    this.lastMs = nowMs;
    // Weight of the newest interval in the average: 1 - 2^(-dt / half-life).
    const alpha = dtMs === 0 ? 0 : 1 - 2 ** (-dtMs / this.halfLifeMs);
    if (tierMisses !== undefined && this.tierMisses !== null && tierMisses >= this.tierMisses && dtMs > 0) {
      const instant = ((tierMisses - this.tierMisses) * 1000) / dtMs;
      this.tierMissRate = Math.min(MAX_LOAD, this.tierMissRate + alpha * (instant - this.tierMissRate));
    }
    this.tierMisses = tierMisses ?? null;
    const seen = new Set<number>();
    for (const c of counts) {
      seen.add(c.region);
      const known = this.regions.get(c.region);
      if (known === undefined || c.accesses < known.accesses || known.last.tenant !== c.tenant) {
        this.regions.set(c.region, { accesses: c.accesses, rate: 0, last: c });
        continue;
      }
      const instant = dtMs === 0 ? 0 : ((c.accesses - known.accesses) * 1000) / dtMs;
      known.rate = Math.min(MAX_LOAD, known.rate + alpha * (instant - known.rate));
      known.accesses = c.accesses;
      known.last = c;
    }
    for (const region of [...this.regions.keys()]) if (!seen.has(region)) this.regions.delete(region);
  }

  /** Every region's rate, hottest first. */
  rates(): RegionRate[] {
    return [...this.regions.values()]
      .map((r) => ({ region: r.last.region, tenant: r.last.tenant, capacity: r.last.capacity, rate: r.rate, move: r.last.move }))
      .sort((a, b) => b.rate - a.rate || a.region - b.region);
  }

  /** The server's load now: serverLoad of the rates of the regions it still serves (a sealed
   *  region's traffic has gone to its copy, though its rate takes seconds to decay). */
  load(): number {
    return serverLoad(
      [...this.regions.values()].filter((r) => r.last.move !== 'sealed').map((r) => r.rate),
      this.tierMissRate,
    );
  }

  /** The hottest regions served as usual, for the membership record (rates rounded to 0.01). */
  hot(limit = MAX_HOT_REGIONS): HotRegion[] {
    return this.rates()
      .filter((r) => r.move === 'none' && r.rate > 0)
      .slice(0, limit)
      .map((r) => ({ region: r.region, rate: Math.round(r.rate * 100) / 100 }));
  }
}
