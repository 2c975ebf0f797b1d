// host-view.test.ts — Host View from TS: set semantics against a JS Set, every SIMD path agreeing,
// sharding, key hashing, and option errors.
import { describe, expect, it } from 'vitest';
import { HostView, hostViewKeyHash } from '../dist/dpu/index.js';

function rng(seed: number): () => bigint {
  let s = BigInt(seed) | 1n;
  return () => {
    s ^= (s << 13n) & 0xffffffffffffffffn;
    s ^= s >> 7n;
    s ^= (s << 17n) & 0xffffffffffffffffn;
    return s;
  };
}

describe('Host View from TS', () => {
  it('matches a JS Set over random inserts, erases and lookups, for 1 and 3 shards', () => {
    for (const shards of [1, 3]) {
      const hv = new HostView({ capacity: 50_000, shards });
      const ref = new Set<bigint>();
      const next = rng(shards);
      const universe = Array.from({ length: 20_000 }, () => next());
      for (let round = 0; round < 20; ++round) {
        const batch = new BigUint64Array(1000);
        for (let i = 0; i < batch.length; ++i) batch[i] = universe[Number(next() % 20_000n)]!;
        if (round % 3 === 2) {
          const got = hv.erase(batch);
          batch.forEach((k, i) => expect(got[i]).toBe(ref.delete(k) ? 1 : 0));
        } else {
          const got = hv.insert(batch);
          expect(got.every((v) => v === 1)).toBe(true);
          batch.forEach((k) => ref.add(k));
        }
        const probe = new BigUint64Array(universe.slice(0, 5000));
        const seen = hv.lookup(probe);
        probe.forEach((k, i) => expect(seen[i]).toBe(ref.has(k) ? 1 : 0));
      }
      expect(hv.info().size).toBe(ref.size);
      expect(hv.info().shards).toBe(shards);
      hv.close();
    }
  });

  it('gives identical verdicts on every SIMD path this CPU has', () => {
    const keys = Array.from({ length: 3000 }, (_, i) => `user:${i}`);
    const probe = Array.from({ length: 6000 }, (_, i) => `user:${i}`); // half absent
    const results: string[] = [];
    for (const simd of ['scalar', 'sse4.1', 'avx2', 'neon'] as const) {
      let hv: HostView;
      try {
        hv = new HostView({ capacity: 4000, simd });
      } catch (e) {
        expect((e as { code?: string }).code).toBe('PD3_E_INVAL'); // path not available here
        continue;
      }
      hv.insert(keys);
      results.push(Buffer.from(hv.lookup(probe)).toString('hex'));
      expect(hv.info().simd).toBe(simd);
      hv.close();
    }
    expect(results.length).toBeGreaterThanOrEqual(1);
    expect(new Set(results).size).toBe(1);
    expect(Buffer.from(results[0]!, 'hex').reduce((a, b) => a + b, 0)).toBe(3000);
  });

  it('hashes keys deterministically and distinctly', () => {
    expect(hostViewKeyHash('abc')).toBe(hostViewKeyHash(Buffer.from('abc')));
    const seen = new Set<bigint>();
    for (let i = 0; i < 50_000; ++i) seen.add(hostViewKeyHash(`k${i}`));
    expect(seen.size).toBe(50_000);
    expect(hostViewKeyHash('')).not.toBe(hostViewKeyHash('\0'));
  });

  it('refuses bad options', () => {
    expect(() => new HostView({ capacity: 0 })).toThrow(RangeError);
    expect(() => new HostView({ capacity: 10, shards: 65 })).toThrow(RangeError);
    expect(() => new HostView({ capacity: 10, maxLoad: 1.5 })).toThrow(/PD3_E_INVAL/);
    expect(() => new HostView({ capacity: 10, simd: 'mmx' as 'avx2' })).toThrow(RangeError);
    const hv = new HostView({ capacity: 10 });
    hv.close();
    expect(() => hv.lookup(new BigUint64Array(1))).toThrow(/closed/);
  });
});
