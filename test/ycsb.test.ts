// ycsb.test.ts — the YCSB workload generator (workloads/ycsb.ts): op mixes, zipfian skew against
// the analytic CDF, latest, uniform, keys and values, determinism, option errors, and hard digests
// of the op stream that test/native/ycsb_test.cpp checks against the C++ generator too.
import { describe, expect, it } from 'vitest';
import {
  binaryKey,
  createWorkload,
  detExp,
  detLn,
  fnvMod,
  formatKey,
  valueBytes,
  zeta,
  type WorkloadName,
  type WorkloadOptions,
  type YcsbOp,
} from '../dist/workloads/ycsb.js';

const OP_CODE = { READ: 0, UPDATE: 1, INSERT: 2, SCAN: 3, RMW: 4 } as const;
const M64 = (1n << 64n) - 1n;

/** FNV-1a 64 over bytes, continuing from h. */
function fnv(h: bigint, bytes: Iterable<number>): bigint {
  for (const b of bytes) h = ((h ^ BigInt(b)) * 0x100000001b3n) & M64;
  return h;
}

function le(v: number, width: number): number[] {
  let x = BigInt(v);
  return Array.from({ length: width }, () => {
    const b = Number(x & 0xffn);
    x >>= 8n;
    return b;
  });
}

/** The digest ycsb_test.cpp computes too: per op, type u8, key u64, scanLength u32, version u64 (LE). */
function opsDigest(options: WorkloadOptions, count: number): bigint {
  const w = createWorkload(options);
  let h = 0xcbf29ce484222325n;
  for (let i = 0; i < count; i++) {
    const o = w.next();
    h = fnv(h, [OP_CODE[o.op], ...le(o.key, 8), ...le(o.scanLength ?? 0, 4), ...le(o.version ?? 0, 8)]);
  }
  return h;
}

/** Σ_{i=1..k} i^-θ by plain summation (the analytic CDF of rank < k is zetaSum(k) / zetaSum(n)). */
function zetaSum(k: number, theta: number): number {
  let s = 0;
  for (let i = 1; i <= k; i++) s += Math.pow(i, -theta);
  return s;
}

function take(options: WorkloadOptions, count: number): YcsbOp[] {
  const w = createWorkload(options);
  return Array.from({ length: count }, () => w.next());
}

describe('YCSB workloads', () => {
  it('produces each core workload op mix within 1% over 100k ops', () => {
    const expected: Record<WorkloadName, Record<string, number>> = {
      A: { READ: 0.5, UPDATE: 0.5 },
      B: { READ: 0.95, UPDATE: 0.05 },
      C: { READ: 1 },
      D: { READ: 0.95, INSERT: 0.05 },
      E: { SCAN: 0.95, INSERT: 0.05 },
      F: { READ: 0.5, RMW: 0.5 },
    };
    for (const workload of Object.keys(expected) as WorkloadName[]) {
      const counts: Record<string, number> = {};
      for (const o of take({ workload, recordCount: 10_000, seed: 11 }, 100_000)) counts[o.op] = (counts[o.op] ?? 0) + 1;
      expect(Object.keys(counts).sort()).toEqual(Object.keys(expected[workload]).sort());
      for (const [op, share] of Object.entries(expected[workload])) {
        expect(Math.abs(counts[op]! / 100_000 - share), `${workload} ${op}`).toBeLessThan(0.01);
      }
    }
  });

  it('fills the fields each op needs: versions seq + 1 on writes, scans 1..100, inserts in order', () => {
    const ops = take({ workload: 'E', recordCount: 1000, operationCount: 20_000, seed: 3 }, 20_000);
    let nextInsert = 1000;
    let scanSum = 0;
    let scans = 0;
    const lengths = new Set<number>();
    for (const o of ops) {
      if (o.op === 'INSERT') {
        expect(o.key).toBe(nextInsert++);
        expect(o.version).toBe(o.seq + 1);
      } else {
        expect(o.op).toBe('SCAN');
        expect(o.version).toBeUndefined();
        expect(o.scanLength).toBeGreaterThanOrEqual(1);
        expect(o.scanLength).toBeLessThanOrEqual(100);
        expect(o.key).toBeLessThan(nextInsert);
        lengths.add(o.scanLength!);
        scanSum += o.scanLength!;
        scans++;
      }
    }
    expect(lengths.size).toBe(100);
    expect(Math.abs(scanSum / scans - 50.5)).toBeLessThan(1);
    for (const o of take({ workload: 'F', recordCount: 100, seed: 1 }, 1000)) {
      expect(o.version).toBe(o.op === 'RMW' ? o.seq + 1 : undefined);
      expect(o.scanLength).toBeUndefined();
    }
    for (const o of take({ workload: 'A', recordCount: 100, seed: 1 }, 1000)) {
      expect(o.version).toBe(o.op === 'UPDATE' ? o.seq + 1 : undefined);
    }
  });

  it('gives the top keys of a scrambled zipfian (θ = 0.99) their analytic share', () => {
    const n = 10_000;
    const ops = 200_000;
    const counts = new Float64Array(n);
    for (const o of take({ workload: 'C', recordCount: n, seed: 5 }, ops)) counts[o.key]!++;
    const sorted = Array.from(counts).sort((a, b) => b - a);
    const zn = zetaSum(n, 0.99);
    for (const [top, tolerance] of [
      [1, 0.01],
      [10, 0.02],
      [100, 0.03],
      [1000, 0.03],
    ] as const) {
      const share = sorted.slice(0, top).reduce((a, b) => a + b, 0) / ops;
      expect(Math.abs(share - zetaSum(top, 0.99) / zn), `top ${top}`).toBeLessThan(tolerance);
    }
    // The hottest key is not key 0: the rank is scrambled over the key space.
    const hottest = Array.from(counts).indexOf(sorted[0]!);
    expect(hottest).not.toBe(0);
    expect(hottest).toBe(fnvMod(0, n));
  });

  it('follows θ: a flatter zipfian (θ = 0.5) matches its own CDF', () => {
    const n = 1000;
    const ops = 100_000;
    const counts = new Float64Array(n);
    for (const o of take({ workload: 'C', recordCount: n, seed: 8, theta: 0.5 }, ops)) counts[o.key]!++;
    const sorted = Array.from(counts).sort((a, b) => b - a);
    const share = sorted.slice(0, 10).reduce((a, b) => a + b, 0) / ops;
    expect(Math.abs(share - zetaSum(10, 0.5) / zetaSum(n, 0.5))).toBeLessThan(0.02);
  });

  it('spreads uniform keys evenly', () => {
    const n = 100;
    const counts = new Float64Array(n);
    for (const o of take({ workload: 'C', distribution: 'uniform', recordCount: n, seed: 9 }, 100_000)) counts[o.key]!++;
    // 1000 expected per key, standard deviation about 31.
    for (const c of counts) expect(Math.abs(c - 1000)).toBeLessThan(160);
  });

  it('favours recent inserts with the latest distribution (workload D)', () => {
    const w = createWorkload({ workload: 'D', recordCount: 1000, seed: 4 });
    let reads = 0;
    let newest = 0;
    let newestTen = 0;
    let insertedDuringRun = 0;
    for (let i = 0; i < 100_000; i++) {
      const before = w.insertedCount;
      const o = w.next();
      if (o.op !== 'READ') continue;
      reads++;
      expect(o.key).toBeLessThan(before);
      const age = before - 1 - o.key;
      if (age === 0) newest++;
      if (age < 10) newestTen++;
      if (o.key >= 1000) insertedDuringRun++;
    }
    const n = w.insertedCount;
    // With n around 1000..6000, the newest record gets about 1/zeta(n) of the reads (0.10 .. 0.12).
    expect(newest / reads).toBeGreaterThan(1 / zetaSum(n, 0.99) - 0.02);
    expect(newest / reads).toBeLessThan(1 / zetaSum(1000, 0.99) + 0.02);
    expect(newestTen / reads).toBeGreaterThan(0.25);
    expect(insertedDuringRun / reads).toBeGreaterThan(0.8);
  });

  it('keeps the zipfian hot set in place while workload E inserts', () => {
    const w = createWorkload({ workload: 'E', recordCount: 10_000, operationCount: 100_000, seed: 12 });
    expect(w.zipfianSpace).toBe(10_000 + 10_000); // recordCount + 2 × 5% of the ops, as YCSB
    const halves = [new Map<number, number>(), new Map<number, number>()];
    for (const o of w.ops()) {
      if (o.op === 'INSERT') continue;
      expect(o.key).toBeLessThan(w.insertedCount);
      const half = halves[o.seq < 50_000 ? 0 : 1]!;
      half.set(o.key, (half.get(o.key) ?? 0) + 1);
    }
    expect(w.insertedCount).toBeGreaterThan(14_000);
    // The hottest keys of the first half are still among the hottest of the second (newly inserted
    // keys can join them: ranks that mapped to not-yet-inserted keys start to count).
    const top = (m: Map<number, number>, k: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, k).map(([key]) => key);
    const second = top(halves[1]!, 10);
    for (const key of top(halves[0]!, 5)) expect(second).toContain(key);
  });

  it('is deterministic for a seed, and different seeds differ', () => {
    const options: WorkloadOptions = { workload: 'B', recordCount: 50_000, seed: 77 };
    expect(take(options, 10_000)).toEqual(take(options, 10_000));
    expect(take({ ...options, seed: 77n }, 100)).toEqual(take(options, 100));
    const other = take({ ...options, seed: 78 }, 10_000);
    const same = take(options, 10_000).filter((o, i) => o.key === other[i]!.key).length;
    expect(same).toBeLessThan(2000);
  });

  it('matches the digests of the C++ generator (test/native/ycsb_test.cpp)', () => {
    // Same constants as ycsb_test.cpp: change both, and only when the sequence is meant to change.
    const cases: [WorkloadOptions, bigint][] = [
      [{ workload: 'A', recordCount: 100_000, seed: 42 }, 0x6e9fc41cace6e41en],
      [{ workload: 'B', distribution: 'uniform', recordCount: 1000, seed: 7 }, 0x3cf5391d8b679482n],
      [{ workload: 'C', recordCount: 1_000_000_000, seed: 1 }, 0xd69a12d4d374c569n],
      [{ workload: 'D', recordCount: 1000, operationCount: 10_000, seed: 3 }, 0x55185ae361316b65n],
      [{ workload: 'E', recordCount: 5000, operationCount: 10_000, seed: 5 }, 0x96f6f7a48bdf911cn],
      [{ workload: 'F', recordCount: 777, seed: 0xffffffffffffffffn, theta: 0.5 }, 0xfa03a183fa60b017n],
      [{ workload: 'D', distribution: 'zipfian', recordCount: 3, seed: 0 }, 0xa5abfd68d86a61e7n],
    ];
    const got = cases.map(([o]) => `0x${opsDigest(o, 10_000).toString(16)}n`);
    expect(got).toEqual(cases.map(([, d]) => `0x${d.toString(16)}n`));
  });

  it('derives values from (record, version) alone, same bytes as the C++ value_bytes', () => {
    let h = 0xcbf29ce484222325n;
    for (let n = 0; n < 1000; n += 7) for (const v of [0, 1, 2 ** 40]) h = fnv(h, valueBytes(n, v, 37));
    expect(`0x${h.toString(16)}n`).toBe('0x95f32420ac8f68dcn');
    const w = createWorkload({ workload: 'A', recordCount: 10, seed: 1, valueSize: 64 });
    const v = w.valueOf(3, 5);
    expect(v.length).toBe(64);
    expect(v.equals(valueBytes(3, 5, 64))).toBe(true);
    expect(v.equals(w.valueOf(3, 6))).toBe(false);
    expect(v.equals(w.valueOf(4, 5))).toBe(false);
    expect(valueBytes(3, 5, 10).equals(v.subarray(0, 10))).toBe(true);
    expect(/^[A-Za-z0-9_-]+$/.test(v.toString('latin1'))).toBe(true);
  });

  it('formats fixed-width keys and 8-byte little-endian binary keys', () => {
    const w = createWorkload({ workload: 'C', recordCount: 1000, seed: 1, keyWidth: 6, keyPrefix: 'k' });
    expect(w.keyOf(42)).toBe('k000042');
    expect(w.keyOf(999_999)).toBe('k999999');
    expect(() => w.keyOf(1_000_000)).toThrow(/does not fit in 6 digits/);
    expect(createWorkload({ workload: 'C', recordCount: 1, seed: 1 }).keyOf(7)).toBe('user000000000007');
    expect(formatKey(5, 3)).toBe('user005');
    expect([...binaryKey(0x0102030405)]).toEqual([5, 4, 3, 2, 1, 0, 0, 0]);
    expect([...w.binaryKeyOf(2 ** 40 + 1)]).toEqual([1, 0, 0, 0, 0, 1, 0, 0]);
    expect([...w.loadKeys()]).toEqual(Array.from({ length: 1000 }, (_, i) => i));
  });

  it('stops after operationCount ops', () => {
    const w = createWorkload({ workload: 'A', recordCount: 10, operationCount: 3, seed: 1 });
    expect([...w.ops()].map((o) => o.seq)).toEqual([0, 1, 2]);
    expect(w.done).toBe(true);
    expect(() => w.next()).toThrow(/exhausted: all 3 operations/);
    expect([...createWorkload({ workload: 'A', recordCount: 10, operationCount: 0, seed: 1 }).ops()]).toEqual([]);
  });

  it('computes zeta exactly enough, and its own ln/exp agree with Math', () => {
    for (const n of [1, 2, 10, 1024, 1025, 5000, 200_000]) {
      for (const theta of [0.2, 0.5, 0.99]) {
        const direct = zetaSum(n, theta);
        expect(Math.abs(zeta(n, theta) - direct) / direct, `n ${n} θ ${theta}`).toBeLessThan(1e-12);
      }
    }
    for (const x of [1e-300, 1e-5, 0.3, 0.99, 1, 1.5, 1e9, 1e300]) {
      expect(Math.abs(detLn(x) - Math.log(x))).toBeLessThanOrEqual(4e-16 * Math.max(1, Math.abs(Math.log(x))));
    }
    for (const x of [-700, -30, -1, -1e-12, 0, 0.5, 2, 100, 700]) {
      expect(Math.abs(detExp(x) - Math.exp(x)) / Math.exp(x)).toBeLessThan(2e-15);
    }
    expect(detExp(-800)).toBe(0);
  });

  it('refuses bad options with a message naming them', () => {
    const ok: WorkloadOptions = { workload: 'A', recordCount: 10, seed: 1 };
    const bad: [Partial<WorkloadOptions> | Record<string, unknown>, RegExp][] = [
      [{ recordCount: 0 }, /recordCount must be an integer 1 \.\./],
      [{ recordCount: -5 }, /recordCount/],
      [{ recordCount: 1.5 }, /recordCount/],
      [{ recordCount: 2 ** 37 + 1 }, /recordCount/],
      [{ recordCount: undefined }, /recordCount/],
      [{ workload: 'G' }, /unknown workload "G" \(expected one of A, B, C, D, E, F\)/],
      [{ workload: 'a' }, /unknown workload/],
      [{ distribution: 'gaussian' }, /unknown distribution "gaussian"/],
      [{ theta: 0 }, /theta must be a number with 0 < theta < 1/],
      [{ theta: 1 }, /theta/],
      [{ theta: 1.2 }, /theta/],
      [{ theta: Number.NaN }, /theta/],
      [{ seed: -1 }, /seed/],
      [{ seed: 0.5 }, /seed/],
      [{ seed: 1n << 64n }, /seed must be 0 \.\. 2\^64 - 1/],
      [{ seed: undefined }, /seed/],
      [{ operationCount: -1 }, /operationCount/],
      [{ keyWidth: 0 }, /keyWidth/],
      [{ keyWidth: 1, recordCount: 11 }, /keyWidth 1 is too small: record 10 needs 2 digits/],
      [{ workload: 'D', keyWidth: 2, recordCount: 10, operationCount: 91 }, /keyWidth 2 is too small: record 100 needs 3 digits/],
      [{ valueSize: 0 }, /valueSize/],
      [{ valueSize: 2 ** 20 + 1 }, /valueSize/],
      [{ keyPrefix: 5 }, /keyPrefix must be a string/],
    ];
    for (const [change, message] of bad) {
      expect(() => createWorkload({ ...ok, ...change } as WorkloadOptions), JSON.stringify(change, (_, v) => (typeof v === 'bigint' ? `${v}n` : v))).toThrow(message);
    }
    expect(() => createWorkload({ workload: 'D', keyWidth: 2, recordCount: 10, operationCount: 90, seed: 1 })).not.toThrow();
    expect(() => zeta(-1, 0.5)).toThrow(/non-negative integer/);
    expect(() => valueBytes(1, -1, 8)).toThrow(/version/);
  });
});
