// pd3-kv-index.test.ts — pd3-kv's typed-array key index alone: millions of keys inserted and all
// found (2 M by default; PD3_KV_INDEX_KEYS=10000000 runs the 10 M the store is sized for), exact
// handling of hash collisions between keys whose records are checked, and random inserts,
// updates and deletes against a Map.
import { describe, expect, it } from 'vitest';
import { KeyIndex, hashKey, type KeyHash } from '../dist/examples/pd3-kv/index.js';
import { Rand } from './workers/model-run.mjs';

const MANY = Number(process.env.PD3_KV_INDEX_KEYS ?? 2_000_000);
const always = (): boolean => true;

describe('pd3-kv key index', () => {
  it(`holds ${MANY.toLocaleString('en')} keys: every one found at its address after doublings`, () => {
    const index = new KeyIndex(1024);
    const h: KeyHash = { hi: 0, lo: 0 };
    const key = Buffer.alloc(24);
    const hashOf = (i: number): void => hashKey(key.subarray(0, key.write(`key:${i}`, 0, 'latin1')), h);
    for (let i = 0; i < MANY; ++i) {
      hashOf(i);
      if (index.find(h, always) >= 0) throw new Error(`key:${i} found before it was inserted (64-bit hash collision?)`);
      index.insert(h, i * 40, 40, (i & 7) === 0);
    }
    expect(index.size).toBe(MANY);
    let wrong = 0;
    for (let i = 0; i < MANY; ++i) {
      hashOf(i);
      const slot = index.find(h, always);
      if (slot < 0 || index.address(slot) !== i * 40 || index.recordLength(slot) !== 40 || index.hasTtl(slot) !== ((i & 7) === 0)) wrong++;
    }
    expect(wrong).toBe(0);
    hashOf(MANY);
    expect(index.find(h, always)).toBe(-1);
    // 20 bytes per slot, at most ¾ full: 26.7 to 53.3 bytes per key.
    const perKey = index.bytes / index.size;
    expect(perKey).toBeGreaterThanOrEqual(20 / 0.75);
    expect(perKey).toBeLessThanOrEqual(2 * 20 / 0.75);
    console.log(`index: ${MANY} keys, ${index.capacity} slots, ${(index.bytes / 2 ** 20).toFixed(0)} MiB, ${perKey.toFixed(1)} bytes/key`);
  }, 60_000);

  it('keys with the same hash stay apart when the check compares the records', () => {
    // Every key gets one hash: all collide, and the check (like the store's for records in memory)
    // tells them apart by the key stored at the address.
    const stored: string[] = [];
    const index = new KeyIndex(16);
    const same: KeyHash = { hi: 0xdeadbeef, lo: 7 };
    let probe = '';
    const check = (address: number): boolean => stored[address] === probe;
    for (let i = 0; i < 40; ++i) {
      probe = `k${i}`;
      expect(index.find(same, check)).toBe(-1);
      stored.push(probe);
      index.insert(same, i, 10, false);
    }
    for (let i = 0; i < 40; ++i) {
      probe = `k${i}`;
      expect(index.address(index.find(same, check))).toBe(i);
    }
    // Removing one in the middle of the run keeps the others reachable (backward shift).
    probe = 'k17';
    index.remove(index.find(same, check));
    expect(index.find(same, check)).toBe(-1);
    for (let i = 0; i < 40; ++i) {
      if (i === 17) continue;
      probe = `k${i}`;
      expect(index.address(index.find(same, check))).toBe(i);
    }
  });

  it('random inserts, updates, TTL flags and removes agree with a Map, through growth and clear', () => {
    const rand = new Rand(42);
    const index = new KeyIndex(16);
    const model = new Map<number, { address: number; length: number; ttl: boolean }>();
    // Few distinct `lo` values: long probe runs that wrap around the table end.
    const hashOf = (k: number): KeyHash => ({ hi: (k * 2654435761) >>> 0, lo: (k % 13) * 977 });
    for (let step = 0; step < 60_000; ++step) {
      const k = rand.int(3000);
      const h = hashOf(k);
      const slot = index.find(h, always);
      expect(slot >= 0).toBe(model.has(k));
      const op = rand.int(10);
      if (op < 5) {
        const entry = { address: rand.int(2 ** 30) * 4096 + rand.int(4096), length: 1 + rand.int(65536), ttl: rand.int(2) === 1 };
        if (slot >= 0) index.update(slot, entry.address, entry.length, entry.ttl);
        else index.insert(h, entry.address, entry.length, entry.ttl);
        model.set(k, entry);
      } else if (op < 8 && slot >= 0) {
        index.remove(slot);
        model.delete(k);
      } else if (slot >= 0) {
        const e = model.get(k)!;
        expect([index.address(slot), index.recordLength(slot), index.hasTtl(slot)]).toEqual([e.address, e.length, e.ttl]);
        e.ttl = !e.ttl;
        index.setTtl(slot, e.ttl);
      }
      if (step === 30_000) {
        index.clear();
        model.clear();
      }
    }
    expect(index.size).toBe(model.size);
    for (const [k, e] of model) {
      const slot = index.find(hashOf(k), always);
      expect([index.address(slot), index.recordLength(slot), index.hasTtl(slot)]).toEqual([e.address, e.length, e.ttl]);
    }
  });

  it('refuses addresses it cannot hold', () => {
    const index = new KeyIndex(16);
    expect(() => index.insert({ hi: 1, lo: 1 }, 2 ** 52, 10, false)).toThrow(RangeError);
    expect(() => index.insert({ hi: 1, lo: 1 }, -1, 10, false)).toThrow(RangeError);
  });
});
