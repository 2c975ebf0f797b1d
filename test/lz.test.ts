// lz.test.ts — checkAndReturn from TS, both implementations ('ts' over mapped memory, 'native'
// through N-API), against a model of the zone, including reclamation, invalidation and clean.
import { afterEach, describe, expect, it } from 'vitest';
import { Pd3Host, constants as C, type CheckAndReturnImpl } from '../dist/host/index.js';
import { AgentSession } from '../dist/dpu/index.js';
import { uniqueName } from './helpers.js';

const cleanup: Array<() => void> = [];
afterEach(() => {
  while (cleanup.length) cleanup.pop()!();
});

// dmaLatencyUs: the agent reaches the zone through the DMA latency backend (else shared memory).
function zone(impl: CheckAndReturnImpl, items: number, bytes = 1 << 20, dmaLatencyUs?: number): { host: Pd3Host; agent: AgentSession } {
  const host = Pd3Host.create({ name: uniqueName('lz'), loadingZoneItems: items, loadingZoneBytes: bytes, checkAndReturn: impl });
  const agent = AgentSession.attach(host.name, dmaLatencyUs === undefined ? {} : { dmaLatencyUs });
  cleanup.push(() => {
    agent.close();
    host.close();
  });
  return { host, agent };
}

const key = (i: number): Buffer => Buffer.from(`key-${i}`);

for (const impl of ['ts', 'native'] as const) {
  describe(`checkAndReturn (${impl})`, () => {
    it('returns the item once, then misses', () => {
      const { host, agent } = zone(impl, 64);
      expect(agent.produce(0, key(1), Buffer.from('hello world'))).toBeGreaterThan(0);
      const dest = Buffer.alloc(32);
      expect(host.checkAndReturn(key(1), dest)).toBe(11);
      expect(dest.subarray(0, 11).toString()).toBe('hello world');
      expect(host.checkAndReturn(key(1), dest)).toBe(0);
      expect(host.checkAndReturn(key(2), dest)).toBe(0);
      expect(host.checkAndReturn(Buffer.from('key-'), dest)).toBe(0); // a prefix is not the key
    });

    it('leaves an item that does not fit dest unconsumed', () => {
      const { host, agent } = zone(impl, 64);
      agent.produce(0, key(1), Buffer.alloc(100, 7));
      expect(host.checkAndReturn(key(1), Buffer.alloc(99))).toBe(C.status.PD3_E_DEST_SMALL);
      const dest = Buffer.alloc(100);
      expect(host.checkAndReturn(key(1), dest)).toBe(100);
      expect(dest.every((b) => b === 7)).toBe(true);
    });

    it('rejects empty and oversized keys', () => {
      const { host } = zone(impl, 64);
      expect(host.checkAndReturn(Buffer.alloc(0), Buffer.alloc(8))).toBe(C.status.PD3_E_INVAL);
      expect(host.checkAndReturn(Buffer.alloc(C.MAX_KEY_LEN + 1), Buffer.alloc(8))).toBe(C.status.PD3_E_INVAL);
    });

    // The agent side through shared memory, and through the DMA latency backend at 0.2 µs.
    for (const dma of [undefined, 0.2] as const) {
      it(`matches a model over 20,000 random produce/check/invalidate/clean operations (agent: ${dma === undefined ? 'shared memory' : `DMA ${dma} µs`})`, () => {
        const CAP = 64;
        const { host, agent } = zone(impl, CAP, 1 << 20, dma);
        type Item = { key: number; value: Buffer; state: 'P' | 'C' | 'I' };
        const live: Item[] = []; // unfreed items, oldest first
        let seed = impl === 'ts' ? 1 : 2;
        const rnd = (n: number): number => {
          seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5; // xorshift32
          return (seed >>> 0) % n;
        };
        const dest = Buffer.alloc(512);
        let hits = 0;
        for (let step = 0; step < 20_000; ++step) {
          const k = rnd(48);
          const op = rnd(10);
          if (op < 4) {
            const value = Buffer.alloc(1 + rnd(300), rnd(256));
            if (value.length >= 4) value.writeUInt32LE(step, 0); // tells items of one key apart
            if (live.length === CAP) live.shift(); // the zone reclaims the oldest item, whatever its state
            expect(agent.produce(step & C.ID_MASK, key(k), value)).toBeGreaterThan(0);
            live.push({ key: k, value, state: 'P' });
          } else if (op < 8) {
            // The newest PRODUCED item of the key wins.
            const want = [...live].reverse().find((it) => it.key === k && it.state === 'P');
            const got = host.checkAndReturn(key(k), dest);
            if (want === undefined) {
              expect(got).toBe(0);
            } else {
              expect(got).toBe(want.value.length);
              expect(dest.subarray(0, got).equals(want.value)).toBe(true);
              want.state = 'C';
              hits++;
            }
          } else if (op === 8) {
            const n = live.filter((it) => it.key === k && it.state === 'P').length;
            expect(agent.invalidate(key(k))).toBe(n);
            for (const it of live) if (it.key === k && it.state === 'P') it.state = 'I';
          } else {
            let n = 0;
            while (live.length > 0 && live[0]!.state !== 'P') live.shift(), n++;
            expect(agent.clean()).toBe(n);
          }
          expect(agent.pending()).toBe(live.length);
        }
        expect(hits).toBeGreaterThan(1000);
        const s = host.stats();
        expect(s.lz_produced).toBeGreaterThan(7000);
        expect(s.lz_reclaimed_unconsumed).toBeGreaterThan(0);
        expect(s.lz_invalidated).toBeGreaterThan(0);
      });
    }

    it('never returns data of a reclaimed item when the data ring wraps', () => {
      // 16 items of ~1 KiB into a 4 KiB data ring: constant reclamation by bytes.
      const { host, agent } = zone(impl, 16, 4096);
      const dest = Buffer.alloc(2048);
      let returned = 0;
      for (let i = 0; i < 5000; ++i) {
        const v = Buffer.alloc(600 + (i % 7) * 50, i & 0xff);
        agent.produce(0, key(i), v);
        // Look back 3 and 6 items: about 5 fit, so the older ones are often already reclaimed.
        for (const back of [3, 6]) {
          const j = i - back;
          if (j < 0) continue;
          const n = host.checkAndReturn(key(j), dest);
          if (n > 0) {
            returned++;
            expect(n).toBe(600 + (j % 7) * 50);
            expect(dest.subarray(0, n).every((b) => b === (j & 0xff))).toBe(true);
          }
        }
      }
      expect(returned).toBeGreaterThan(2500);
      expect(host.stats().lz_reclaimed_unconsumed).toBeGreaterThan(0);
    });
  });
}
