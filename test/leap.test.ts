// leap.test.ts — the Leap baseline prefetcher (workloads/leap.ts): majority trends
// (sequential, strided, with noise), no trend, growing the detection span, the adaptive window,
// the read-around fallback, bounds, option errors, and a digest test/native/leap_test.cpp shares.
import { describe, expect, it } from 'vitest';
import { LeapPrefetcher, type LeapDecision } from '../dist/workloads/index.js';

const M64 = (1n << 64n) - 1n;

/** Feeds addresses as misses; returns the decision of the last. */
function misses(p: LeapPrefetcher, addrs: number[]): LeapDecision {
  let d: LeapDecision | undefined;
  for (const a of addrs) d = p.recordMiss(a);
  return d!;
}

const range = (start: number, count: number, stride = 1) => Array.from({ length: count }, (_, i) => start + i * stride);

/** xorshift32, the access-script generator leap_test.cpp uses too. */
function xorshift32(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}

/**
 * A 10,000-access script in 200-access phases (sequential, stride 3, stride −2, random, stride 7
 * with every 4th access random), run against a prefetch cache: a hit if an earlier decision
 * prefetched the address, else a miss. FNV-1a 64 of every decision, as leap_test.cpp computes.
 */
function scriptDigest(): { digest: bigint; hits: number; misses: number } {
  const p = new LeapPrefetcher({ addressLimit: 100_000 });
  const next = xorshift32(0x9e3779b9);
  const cache = new Set<number>();
  let h = 0xcbf29ce484222325n;
  const mix = (v: bigint, bytes: number) => {
    for (let i = 0; i < bytes; i++) {
      h = ((h ^ ((v >> BigInt(8 * i)) & 0xffn)) * 0x100000001b3n) & M64;
    }
  };
  let hits = 0;
  let missCount = 0;
  for (let phase = 0; phase < 50; phase++) {
    const base = (next() % 50_000) + 10_000;
    for (let i = 0; i < 200; i++) {
      let addr: number;
      switch (phase % 5) {
        case 0: addr = base + i; break;
        case 1: addr = base + 3 * i; break;
        case 2: addr = base - 2 * i; break;
        case 3: addr = next() % 100_000; break;
        default: addr = i % 4 === 3 ? next() % 100_000 : base + 7 * i; break;
      }
      if (cache.delete(addr)) {
        p.recordHit(addr);
        hits++;
        continue;
      }
      missCount++;
      const d = p.recordMiss(addr);
      mix(BigInt({ suspended: 0, majority: 1, around: 2 }[d.trend]), 1);
      mix(BigInt(d.window), 4);
      mix(BigInt.asUintN(64, BigInt(d.delta)), 8);
      mix(BigInt(d.addresses.length), 4);
      for (const a of d.addresses) {
        mix(BigInt(a), 8);
        cache.add(a);
      }
    }
  }
  return { digest: h, hits, misses: missCount };
}

describe('Leap prefetcher', () => {
  it('follows a sequential stream and grows its window with prefetch hits', () => {
    const p = new LeapPrefetcher();
    expect(p.recordMiss(100)).toEqual({ trend: 'suspended', window: 0, delta: 0, addresses: [] });
    // The second miss shows delta 1 and follows it: one page ahead.
    expect(p.recordMiss(101)).toEqual({ trend: 'majority', window: 1, delta: 1, addresses: [102] });
    // Every prefetched page is hit, then the stream misses again: the window is hits + 1 rounded
    // up to a power of two, capped at 8.
    let addr = 102;
    const windows: number[] = [];
    let last: LeapDecision = { trend: 'suspended', window: 0, delta: 0, addresses: [] };
    let pending = [102];
    for (let round = 0; round < 6; round++) {
      for (const a of pending) {
        expect(a).toBe(addr);
        p.recordHit(addr++);
      }
      expect(p.pendingHits).toBe(pending.length);
      last = p.recordMiss(addr);
      expect(last.trend).toBe('majority');
      expect(last.addresses).toEqual(range(addr + 1, last.window));
      windows.push(last.window);
      addr++;
      pending = last.addresses;
    }
    expect(windows).toEqual([2, 4, 8, 8, 8, 8]);
    expect(p.window).toBe(8);
  });

  it('detects strides of 3 and −2', () => {
    const up = new LeapPrefetcher();
    const d = misses(up, range(1000, 10, 3));
    expect(d).toMatchObject({ trend: 'majority', delta: 3, window: 1, addresses: [1030] });
    expect(up.findTrend()).toEqual({ found: true, delta: 3, span: 9 });
    const down = new LeapPrefetcher();
    misses(down, range(500, 5, -2));
    down.recordHit(490);
    down.recordHit(488);
    expect(down.recordMiss(486)).toEqual({ trend: 'majority', window: 4, delta: -2, addresses: [484, 482, 480, 478] });
  });

  it('finds a majority trend through interleaved noise', () => {
    // Every 5th access jumps elsewhere: 2 of every 5 deltas are noise, 3 are +1.
    const p = new LeapPrefetcher();
    const next = xorshift32(7);
    let a = 5000;
    let d = p.recordMiss(a);
    for (let i = 1; i < 42; i++) {
      d = p.recordMiss(i % 5 === 4 ? next() % 1_000_000 : ++a);
      if (i % 5 === 4) expect(d.trend).toBe('suspended'); // a jump is off the trend
    }
    // The last access (i = 41) follows +1 again; 9 of the newest 16 deltas are +1.
    expect(p.findTrend()).toEqual({ found: true, delta: 1, span: 16 });
    expect(d).toEqual({ trend: 'majority', window: 1, delta: 1, addresses: [a + 1] });
  });

  it('reports no trend for random accesses and suspends prefetching', () => {
    const p = new LeapPrefetcher();
    const next = xorshift32(99);
    // The second miss sees one delta, a trend of one, and follows it; from then on nothing repeats.
    misses(p, [next() % 1_000_000, next() % 1_000_000]);
    for (let i = 0; i < 100; i++) {
      expect(p.recordMiss(next() % 1_000_000)).toEqual({ trend: 'suspended', window: 0, delta: 0, addresses: [] });
    }
    expect(p.findTrend()).toEqual({ found: false, delta: 0, span: 32 });
    // Exactly half is no majority either (more than half is needed).
    const q = new LeapPrefetcher({ historySize: 8 });
    misses(q, [0, 1, 2, 3, 4, 100, 101, 300, 301]); // deltas 1 1 1 1 96 1 199 1
    expect(q.findTrend()).toEqual({ found: true, delta: 1, span: 8 });
    misses(q, [900, 2000]); // deltas 1 1 96 1 199 1 599 1100: four of eight
    expect(q.findTrend()).toEqual({ found: false, delta: 0, span: 8 });
  });

  it('grows the detection span from H/split to H when the newest deltas have no majority', () => {
    const p = new LeapPrefetcher({ historySize: 8, split: 2 });
    // Deltas, oldest first: 1 1 1 1 1 5 7 9. The newest 4 have no majority; all 8 have 1 (5 of 8).
    misses(p, [0, 1, 2, 3, 4, 5, 10, 17, 26]);
    expect(p.findTrend()).toEqual({ found: true, delta: 1, span: 8 });
    const quarter = new LeapPrefetcher({ historySize: 8, split: 4 });
    misses(quarter, [0, 1, 2, 3, 4, 5, 10, 17, 19, 21]); // newest 2: 2 2
    expect(quarter.findTrend()).toEqual({ found: true, delta: 2, span: 2 });
    // With fewer deltas than the span, the vote covers what there is.
    const young = new LeapPrefetcher();
    misses(young, [10, 20, 30]);
    expect(young.findTrend()).toEqual({ found: true, delta: 10, span: 2 });
  });

  it('shrinks the window by at most half per miss once prefetches stop hitting', () => {
    const p = new LeapPrefetcher();
    misses(p, [0, 1]);
    for (let a = 2; a < 9; a++) p.recordHit(a);
    expect(p.recordMiss(9).window).toBe(8);
    // Random misses: no hits and off the trend, so the window only decays (8 → 4 → 2 → 1 → 0);
    // the +1 deltas still hold the majority, so what is prefetched follows +1.
    const next = xorshift32(3);
    const seen: LeapDecision[] = [];
    for (let i = 0; i < 5; i++) seen.push(p.recordMiss(1000 + (next() % 100_000) * 10));
    expect(seen.map((d) => d.window)).toEqual([4, 2, 1, 0, 0]);
    expect(seen.map((d) => d.trend)).toEqual(['majority', 'majority', 'majority', 'suspended', 'suspended']);
    const first = seen[0]!;
    expect(first.addresses.length).toBe(4);
    expect(first.addresses.map((a) => a - first.addresses[0]!)).toEqual([0, 1, 2, 3]);
  });

  it('reads around with the last stride when hits continue but the trend is gone', () => {
    const p = new LeapPrefetcher({ historySize: 4, split: 1 });
    misses(p, [100, 104, 108, 112, 116]);
    p.recordHit(5000);
    p.recordHit(20);
    const d = p.recordMiss(7777); // deltas 4 4884 −4980 7757: no majority, 2 hits → window 4
    expect(d).toEqual({ trend: 'around', window: 4, delta: 4, addresses: [7769, 7773, 7781, 7785] });
  });

  it('reads the neighbours (stride 1) when hits come before any trend was seen', () => {
    // Hits the caller reports for items it did not get from this prefetcher still grow the window.
    const p = new LeapPrefetcher();
    p.recordHit(5);
    p.recordHit(100);
    expect(p.recordMiss(7)).toEqual({ trend: 'around', window: 4, delta: 1, addresses: [5, 6, 8, 9] });
  });

  it('keeps candidates inside [0, addressLimit)', () => {
    const p = new LeapPrefetcher({ addressLimit: 105 });
    misses(p, [100, 101]);
    for (const a of [102, 103]) p.recordHit(a);
    expect(p.recordMiss(104)).toEqual({ trend: 'majority', window: 4, delta: 1, addresses: [] });
    const down = new LeapPrefetcher();
    misses(down, [6, 4]);
    down.recordHit(2);
    // Along −2 from 1: −1 and −3, both below 0.
    expect(down.recordMiss(1)).toEqual({ trend: 'majority', window: 2, delta: -2, addresses: [] });
    const low = new LeapPrefetcher({ historySize: 4, split: 1 });
    misses(low, [9, 6, 3]);
    low.recordHit(50);
    low.recordHit(1);
    // Deltas −3 47 −49 1: no trend; around 2 by 3: −4 and −1 are dropped.
    expect(low.recordMiss(2)).toEqual({ trend: 'around', window: 4, delta: 3, addresses: [5, 8] });
  });

  it('resets to its initial state', () => {
    const p = new LeapPrefetcher();
    misses(p, range(0, 10));
    p.reset();
    expect(p.window).toBe(0);
    expect(p.findTrend()).toEqual({ found: false, delta: 0, span: 0 });
    expect(p.recordMiss(50).trend).toBe('suspended');
  });

  it('matches the decisions of the C++ prefetcher (test/native/leap_test.cpp)', () => {
    const { digest, hits, misses: missCount } = scriptDigest();
    expect(hits + missCount).toBe(10_000);
    expect(hits).toBeGreaterThan(2000); // the sequential and strided phases are caught
    // Same constants as leap_test.cpp: change both, and only when decisions are meant to change.
    expect({ digest: `0x${digest.toString(16)}n`, hits }).toEqual({ digest: '0x2bc3f00439c7bc3dn', hits: 5044 });
  });

  it('refuses bad options and addresses', () => {
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ historySize: 0 }, /historySize must be an integer 1 \.\. 4096/],
      [{ historySize: 2.5 }, /historySize/],
      [{ historySize: 5000 }, /historySize/],
      [{ split: 0 }, /split must be an integer 1 \.\. 32/],
      [{ split: 33 }, /split/],
      [{ maxWindow: 0 }, /maxWindow/],
      [{ maxWindow: 4097 }, /maxWindow/],
      [{ addressLimit: 0 }, /addressLimit/],
      [{ addressLimit: 2 ** 54 }, /addressLimit/],
      [{ historySize: '8' }, /historySize/],
    ];
    for (const [options, message] of bad) expect(() => new LeapPrefetcher(options), JSON.stringify(options)).toThrow(message);
    const p = new LeapPrefetcher();
    for (const a of [-1, 1.5, Number.NaN, 2 ** 53]) {
      expect(() => p.recordMiss(a)).toThrow(/address must be a safe non-negative integer/);
      expect(() => p.recordHit(a)).toThrow(/address/);
    }
    expect(p.findTrend().span).toBe(0); // refused addresses left nothing behind
  });
});
