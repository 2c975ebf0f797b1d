// leap.ts — the "leap" baseline prefetcher: Leap's majority-trend detection (Boyer–Moore voting over
// the deltas of recent accesses) and its adaptive prefetch window (Maruf & Chowdhury, "Effectively
// Prefetching Remote Memory with Leap", USENIX ATC'20, Algorithms 1–2), for a host that fetches
// pages or slots from remote memory. Same decisions as native/workloads/leap.hpp (docs/workloads.md).

/** What LeapPrefetcher accepts. */
export interface LeapOptions {
  /** Deltas kept in the access history, H (default 32, as Leap's evaluation). */
  historySize?: number;
  /** Detection starts on the newest H/split deltas and doubles up to H (default 2). */
  split?: number;
  /** Largest prefetch window, PWsize_max (default 8, Linux's default read-ahead of 8 pages). */
  maxWindow?: number;
  /** Candidates must be below this (e.g. the number of pages); default 2^53. */
  addressLimit?: number;
}

/** How recordMiss chose its candidates. */
export type LeapTrend =
  /** Window 0: no prefetch hits and the miss is off the trend, prefetching is suspended. */
  | 'suspended'
  /** A majority delta in the history: `window` addresses along it from the miss. */
  | 'majority'
  /** No majority now: `window` addresses around the miss, spaced by the last majority delta. */
  | 'around';

/** The outcome of one miss. */
export interface LeapDecision {
  trend: LeapTrend;
  /** The prefetch window size after this miss (Pwsize_t). */
  window: number;
  /** The stride used (0 when suspended). */
  delta: number;
  /** Addresses to prefetch (the missed one excluded: the caller fetches it anyway). */
  addresses: number[];
}

/** The result of majority detection over the current history. */
export interface LeapTrendResult {
  found: boolean;
  /** The majority delta when found (may be 0: repeated accesses to one address). */
  delta: number;
  /** How many newest deltas the last vote covered. */
  span: number;
}

/** Largest historySize accepted. */
export const LEAP_MAX_HISTORY = 4096;
/** Largest maxWindow accepted. */
export const LEAP_MAX_WINDOW = 4096;
/** Default and largest addressLimit: addresses are safe integers. */
const ADDRESS_LIMIT = 2 ** 53;

/**
 * Leap's prefetcher for one access stream. Report every access that reaches remote memory's
 * cache: recordHit(addr) when a prefetched item served it, recordMiss(addr) when it had to be
 * fetched (prefetch the returned addresses). Both go into the history, as Leap logs every fault.
 */
export class LeapPrefetcher {
  readonly historySize: number;
  readonly split: number;
  readonly maxWindow: number;
  readonly addressLimit: number;
  private readonly deltas: Float64Array; // ring of the newest deltas
  private head = 0; // next slot to write
  private count = 0; // deltas held, <= historySize
  private last = -1; // previous access, -1 before the first
  private hits = 0; // prefetch hits since the last miss (Chit)
  private prevWindow = 0; // Pwsize_{t-1}
  private lastTrend = 1; // the latest non-zero majority delta; read-around (1) until one is seen

  constructor(options: LeapOptions = {}) {
    this.historySize = intIn('historySize', options.historySize ?? 32, 1, LEAP_MAX_HISTORY);
    this.split = intIn('split', options.split ?? 2, 1, this.historySize);
    this.maxWindow = intIn('maxWindow', options.maxWindow ?? 8, 1, LEAP_MAX_WINDOW);
    this.addressLimit = intIn('addressLimit', options.addressLimit ?? ADDRESS_LIMIT, 1, ADDRESS_LIMIT);
    this.deltas = new Float64Array(this.historySize);
  }

  /** The current prefetch window (Pwsize_{t-1}). */
  get window(): number {
    return this.prevWindow;
  }

  /** Prefetch hits counted since the last miss. */
  get pendingHits(): number {
    return this.hits;
  }

  /** An access served by an earlier prefetch: grows the next window. */
  recordHit(addr: number): void {
    this.log(addr);
    this.hits++;
  }

  /** A demand miss on addr: logs it, adapts the window and returns what to prefetch. */
  recordMiss(addr: number): LeapDecision {
    const previous = this.last;
    this.log(addr);
    const trend = this.findTrend();
    const usable = trend.found && trend.delta !== 0;
    if (usable) this.lastTrend = trend.delta;
    // Algorithm 2, GetPrefetchWindowSize.
    let window: number;
    if (this.hits === 0) {
      const followsTrend = usable && previous >= 0 && addr - previous === trend.delta;
      window = followsTrend ? 1 : 0;
    } else {
      window = roundUpPow2(Math.min(this.hits, this.maxWindow - 1) + 1);
    }
    window = Math.min(window, this.maxWindow);
    const floor = Math.floor(this.prevWindow / 2); // shrink at most by half per miss
    if (window < floor) window = floor;
    this.hits = 0;
    this.prevWindow = window;
    if (window === 0) return { trend: 'suspended', window, delta: 0, addresses: [] };
    // Algorithm 2, DoPrefetch: along the trend, or around the miss with the latest trend.
    const addresses: number[] = [];
    if (usable) {
      for (let k = 1; k <= window; k++) this.push(addresses, addr + k * trend.delta);
      return { trend: 'majority', window, delta: trend.delta, addresses };
    }
    const stride = Math.abs(this.lastTrend);
    const first = -Math.floor(window / 2);
    for (let k = first; k <= first + window; k++) if (k !== 0) this.push(addresses, addr + k * stride);
    return { trend: 'around', window, delta: stride, addresses };
  }

  /**
   * Algorithm 1, FindTrend: Boyer–Moore majority vote over the newest H/split deltas; without a
   * strict majority (more than half), the span doubles, up to the whole history.
   */
  findTrend(): LeapTrendResult {
    let span = Math.max(1, Math.floor(this.historySize / this.split));
    for (;;) {
      const n = Math.min(span, this.count);
      if (n === 0) return { found: false, delta: 0, span: 0 };
      let candidate = 0;
      let votes = 0;
      for (let i = 0; i < n; i++) {
        const d = this.newest(i);
        if (votes === 0) {
          candidate = d;
          votes = 1;
        } else if (d === candidate) votes++;
        else votes--;
      }
      let support = 0;
      for (let i = 0; i < n; i++) if (this.newest(i) === candidate) support++;
      if (2 * support > n) return { found: true, delta: candidate, span: n };
      if (n === this.count || span >= this.historySize) return { found: false, delta: 0, span: n };
      span = Math.min(2 * span, this.historySize);
    }
  }

  /** Forgets the history, the hit count and the window. */
  reset(): void {
    this.head = 0;
    this.count = 0;
    this.last = -1;
    this.hits = 0;
    this.prevWindow = 0;
    this.lastTrend = 1;
  }

  private log(addr: number): void {
    if (!Number.isSafeInteger(addr) || addr < 0) throw new RangeError(`address must be a safe non-negative integer, got ${addr}`);
    if (this.last >= 0) {
      this.deltas[this.head] = addr - this.last;
      this.head = (this.head + 1) % this.historySize;
      if (this.count < this.historySize) this.count++;
    }
    this.last = addr;
  }

  // The i-th newest delta (0 = newest).
  private newest(i: number): number {
    return this.deltas[(this.head - 1 - i + 2 * this.historySize) % this.historySize]!;
  }

  private push(out: number[], candidate: number): void {
    if (candidate >= 0 && candidate < this.addressLimit) out.push(candidate);
  }
}

function roundUpPow2(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}

function intIn(name: string, v: unknown, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new RangeError(`${name} must be an integer ${min} .. ${max}, got ${String(v)}`);
  }
  return v;
}
