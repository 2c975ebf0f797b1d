// ycsb.ts — seeded YCSB core workloads A–F (op mix, uniform / scrambled zipfian / latest keys, keys
// and deterministic values), bit-for-bit the same sequence as native/workloads/ycsb.hpp (docs/workloads.md).
//
// Everything that decides an op uses 64-bit integer arithmetic written with 32-bit halves, IEEE
// +, −, ×, ÷ and floor, and this file's own ln/exp (Math.pow and C++ std::pow differ in the last
// bit now and then, which would change a key once in a while). Keep any change mirrored in ycsb.hpp:
// the hard digests in test/ycsb.test.ts and test/native/ycsb_test.cpp catch a side that drifts.

/** The YCSB core workloads. */
export type WorkloadName = 'A' | 'B' | 'C' | 'D' | 'E' | 'F';
/** How the key of a READ / UPDATE / SCAN / RMW is chosen. */
export type Distribution = 'uniform' | 'zipfian' | 'latest';
/** An operation a client performs; RMW = read the record, then write it back. */
export type OpName = 'READ' | 'UPDATE' | 'INSERT' | 'SCAN' | 'RMW';

/** One generated operation. */
export interface YcsbOp {
  /** 0-based position in the run. */
  seq: number;
  op: OpName;
  /** Record number; the key bytes are keyOf(key) or binaryKeyOf(key). */
  key: number;
  /** SCAN only: how many records from `key` on (key order), 1..100. */
  scanLength?: number;
  /** UPDATE / INSERT / RMW only: write valueOf(key, version); it is seq + 1 (the load wrote 0). */
  version?: number;
}

/** What createWorkload accepts. */
export interface WorkloadOptions {
  workload: WorkloadName;
  /** Default: 'latest' for D, 'zipfian' otherwise (as YCSB's workload files). */
  distribution?: Distribution;
  /** Records written by the load phase: 0 .. recordCount − 1. */
  recordCount: number;
  /** Ops in the run; unbounded when absent. Also sizes the zipfian key space for inserts. */
  operationCount?: number;
  /** Any integer 0 .. 2^64 − 1 (a number must be a safe integer). */
  seed: number | bigint;
  /** Decimal digits after the prefix in keyOf (default 12). */
  keyWidth?: number;
  /** Default 'user', as YCSB. */
  keyPrefix?: string;
  /** Bytes per value (default 100: one YCSB field). */
  valueSize?: number;
  /** Zipfian constant θ, 0 < θ < 1 (default 0.99). */
  theta?: number;
}

/** Largest key space: fnvMod reduces a 64-bit hash 16 bits at a time, exact in doubles up to this. */
export const MAX_RECORDS = 2 ** 37;
/** Largest operationCount: keeps operationCount × 100 exact in a double. */
export const MAX_OPERATIONS = 2 ** 45;
/** Largest valueSize accepted (1 MiB). */
export const MAX_VALUE_SIZE = 1 << 20;
/** Largest keyWidth: 2^53 − 1 has 16 digits, wider is only padding. */
export const MAX_KEY_WIDTH = 20;

// ---- 64-bit helpers on (hi, lo) uint32 halves ----------------------------------------------------

const TWO_32 = 4294967296;
const TWO_M32 = 2.3283064365386963e-10; // 2^-32
// Scratch result of mul64 / mix64, so the hot paths allocate nothing.
const wide = new Uint32Array(2);

/** (ah:al)·(bh:bl) mod 2^64 into wide = [hi, lo]. */
function mul64(ah: number, al: number, bh: number, bl: number): void {
  const a0 = al & 0xffff;
  const a1 = al >>> 16;
  const b0 = bl & 0xffff;
  const b1 = bl >>> 16;
  const mid = a0 * b1 + a1 * b0; // < 2^33, exact
  const low = a0 * b0 + (mid % 65536) * 65536; // < 2^33, exact
  const lo = low >>> 0;
  const carry = (low - lo) * TWO_M32;
  const hi = a1 * b1 + Math.floor(mid / 65536) + carry + Math.imul(ah, bl) + Math.imul(al, bh);
  wide[0] = hi >>> 0;
  wide[1] = lo;
}

/** splitmix64's finaliser (a bijection on 64-bit words) of (hi:lo), into wide. */
function mix64(hi: number, lo: number): void {
  lo = (lo ^ ((lo >>> 30) | (hi << 2))) >>> 0;
  hi = (hi ^ (hi >>> 30)) >>> 0;
  mul64(hi, lo, 0xbf58476d, 0x1ce4e5b9);
  hi = wide[0]!;
  lo = wide[1]!;
  lo = (lo ^ ((lo >>> 27) | (hi << 5))) >>> 0;
  hi = (hi ^ (hi >>> 27)) >>> 0;
  mul64(hi, lo, 0x94d049bb, 0x133111eb);
  hi = wide[0]!;
  lo = wide[1]!;
  wide[1] = (lo ^ ((lo >>> 31) | (hi << 1))) >>> 0;
  wide[0] = (hi ^ (hi >>> 31)) >>> 0;
}

/** The high 32 bits of a safe non-negative integer (the low ones are n >>> 0). */
function hiOf(n: number): number {
  return Math.floor(n / TWO_32) >>> 0;
}

// ---- PRNG: xoshiro256**, seeded with splitmix64 --------------------------------------------------

const MASK64 = (1n << 64n) - 1n;

/** xoshiro256** (Blackman & Vigna): the one random stream a workload draws from, in a fixed order. */
export class Xoshiro256 {
  // s0..s3 as [hi, lo] pairs: a typed array keeps the words unboxed.
  private readonly s = new Uint32Array(8);
  // The last output, split.
  private outHi = 0;
  private outLo = 0;

  constructor(seed: bigint) {
    // splitmix64 expands the seed: never four zero words, and close seeds give unrelated states.
    let x = BigInt.asUintN(64, seed);
    for (let i = 0; i < 4; i++) {
      x = (x + 0x9e3779b97f4a7c15n) & MASK64;
      let z = x;
      z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
      z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
      z ^= z >> 31n;
      this.s[2 * i] = Number(z >> 32n);
      this.s[2 * i + 1] = Number(z & 0xffffffffn);
    }
  }

  /** Advances one step; the output is left in outHi/outLo. */
  private step(): void {
    const s = this.s;
    const h0 = s[0]!, l0 = s[1]!, h1 = s[2]!, l1 = s[3]!, h2 = s[4]!, l2 = s[5]!, h3 = s[6]!, l3 = s[7]!;
    // result = rotl(s1 · 5, 7) · 9
    let p = l1 * 5;
    let lo = p >>> 0;
    let hi = (Math.imul(h1, 5) + (p - lo) * TWO_M32) >>> 0;
    const rh = ((hi << 7) | (lo >>> 25)) >>> 0;
    const rl = ((lo << 7) | (hi >>> 25)) >>> 0;
    p = rl * 9;
    lo = p >>> 0;
    this.outHi = (Math.imul(rh, 9) + (p - lo) * TWO_M32) >>> 0;
    this.outLo = lo;
    // t = s1 << 17; s2 ^= s0; s3 ^= s1; s1 ^= s2; s0 ^= s3; s2 ^= t; s3 = rotl(s3, 45)
    const n2h = h2 ^ h0, n2l = l2 ^ l0;
    const n3h = h3 ^ h1, n3l = l3 ^ l1;
    s[2] = h1 ^ n2h;
    s[3] = l1 ^ n2l;
    s[0] = h0 ^ n3h;
    s[1] = l0 ^ n3l;
    s[4] = n2h ^ ((h1 << 17) | (l1 >>> 15));
    s[5] = n2l ^ (l1 << 17);
    s[6] = (n3l << 13) | (n3h >>> 19);
    s[7] = (n3h << 13) | (n3l >>> 19);
  }

  /** Uniform in [0, 1): the top 53 bits of the next output, times 2^-53 (exact). */
  nextDouble(): number {
    this.step();
    return ((this.outHi >>> 0) * 2097152 + (this.outLo >>> 11)) * 1.1102230246251565e-16;
  }

  /** Uniform integer in [0, n), 1 <= n <= 2^53: floor(u·n), clamped (u·n can round up to n). */
  nextBelow(n: number): number {
    const v = Math.floor(this.nextDouble() * n);
    return v < n ? v : n - 1;
  }
}

// ---- deterministic math: ln, exp, pow from + − × ÷ only ------------------------------------------

const LN2_HI = 6.93147180369123816490e-1; // ln 2 rounded to 32 significant bits: k·LN2_HI is exact
const LN2_LO = 1.90821492927058770002e-10; // ln 2 − LN2_HI
const INV_LN2 = 1.44269504088896338700;
const SQRT2 = 1.4142135623730951;
const SQRT1_2 = 0.7071067811865476;
// Series coefficients: LN_COEF[i] = 1/(2i + 1) (atanh), EXP_COEF[j] = 1/j (Taylor), each correctly
// rounded as in ycsb.hpp.
const LN_TERMS = 12;
const EXP_TERMS = 16;
const LN_COEF = Float64Array.from({ length: LN_TERMS }, (_, i) => 1 / (2 * i + 1));
const EXP_COEF = Float64Array.from({ length: EXP_TERMS + 1 }, (_, j) => (j === 0 ? 0 : 1 / j));

/** Natural log of a finite x > 0; about 1 ulp, and the same bits as ycsb.hpp's det_ln. */
export function detLn(x: number): number {
  let k = 0;
  while (x >= TWO_32) {
    x *= TWO_M32;
    k += 32;
  }
  while (x < TWO_M32) {
    x *= TWO_32;
    k -= 32;
  }
  while (x >= SQRT2) {
    x *= 0.5;
    k += 1;
  }
  while (x < SQRT1_2) {
    x *= 2;
    k -= 1;
  }
  // ln x = 2·atanh(s), s = (x − 1)/(x + 1), |s| <= 0.1716: 2(s + s³/3 + s⁵/5 + …), Horner; the
  // first term left out, s^24/25, is below 1e-19.
  const s = (x - 1) / (x + 1);
  const s2 = s * s;
  let series = LN_COEF[LN_TERMS - 1]!;
  for (let i = LN_TERMS - 2; i >= 0; i--) series = LN_COEF[i]! + s2 * series;
  return k * LN2_HI + (k * LN2_LO + 2 * s * series);
}

/** e^x; 0 below −745.2, Infinity above 709.8; the same bits as ycsb.hpp's det_exp. */
export function detExp(x: number): number {
  if (x > 709.78) return Infinity;
  if (x < -745.2) return 0;
  // x = k·ln2 + r, |r| <= ln2/2; e^r by Taylor to r^16/16! (the next term is below 1e-21), Horner,
  // then scaled by 2^k exactly.
  let k = Math.floor(x * INV_LN2 + 0.5);
  const r = x - k * LN2_HI - k * LN2_LO;
  let p = 1;
  for (let j = EXP_TERMS; j >= 1; j--) p = 1 + r * EXP_COEF[j]! * p;
  while (k > 30) {
    p *= 1073741824;
    k -= 30;
  }
  while (k < -30) {
    p *= 9.313225746154785e-10;
    k += 30;
  }
  return k >= 0 ? p * (1 << k) : p / (1 << -k);
}

/** x^y for x >= 0 (0^y = 0), as exp(y·ln x). */
export function detPow(x: number, y: number): number {
  return x === 0 ? 0 : detExp(y * detLn(x));
}

// ---- zipfian (Gray et al., SIGMOD'94, as YCSB's ZipfianGenerator) --------------------------------

// zeta(n) for n <= HEAD is a running sum (table); beyond, the table's last entry plus an
// Euler–Maclaurin tail, so zeta of any n costs O(1): the item count may change on every insert.
const HEAD = 1024;

/** Σ_{i=m+1..n} i^-θ by Euler–Maclaurin (terms to B6; the error is below 1e-25 for m = 1024). */
function zetaTail(m: number, n: number, theta: number): number {
  const g = 1 - theta;
  const c1 = -theta;
  const c3 = -theta * (theta + 1) * (theta + 2);
  const c5 = -theta * (theta + 1) * (theta + 2) * (theta + 3) * (theta + 4);
  const fm = detPow(m, -theta);
  const fn = detPow(n, -theta);
  const integral = (detPow(n, g) - detPow(m, g)) / g;
  const d1 = c1 * detPow(n, -theta - 1) - c1 * detPow(m, -theta - 1);
  const d3 = c3 * detPow(n, -theta - 3) - c3 * detPow(m, -theta - 3);
  const d5 = c5 * detPow(n, -theta - 5) - c5 * detPow(m, -theta - 5);
  const fromM = integral + (fm + fn) / 2 + d1 / 12 - d3 / 720 + d5 / 30240;
  return fromM - fm;
}

/** Prefix sums Σ_{i=1..k} i^-θ for k = 0..HEAD. */
function zetaHead(theta: number): Float64Array {
  const head = new Float64Array(HEAD + 1);
  for (let i = 1; i <= HEAD; i++) head[i] = head[i - 1]! + detPow(i, -theta);
  return head;
}

/** zeta(n, θ) = Σ_{i=1..n} i^-θ, the zipfian normaliser (n >= 0, 0 < θ < 1). */
export function zeta(n: number, theta: number): number {
  checkTheta(theta);
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`zeta: n must be a non-negative integer, got ${n}`);
  const head = zetaHead(theta);
  return n <= HEAD ? head[n]! : head[HEAD]! + zetaTail(HEAD, n, theta);
}

/** Zipfian ranks in [0, n) for a caller-given n (it may grow between draws): rank 0 is hottest. */
export class Zipfian {
  private readonly head: Float64Array;
  private readonly alpha: number;
  private n = -1;
  private zetan = 0;
  private eta = 0;

  constructor(readonly theta: number) {
    checkTheta(theta);
    this.head = zetaHead(theta);
    this.alpha = 1 / (1 - theta);
  }

  /** zeta(n) with this θ. */
  zeta(n: number): number {
    return n <= HEAD ? this.head[n]! : this.head[HEAD]! + zetaTail(HEAD, n, this.theta);
  }

  /** The rank for uniform u in [0, 1) among n >= 1 items. */
  rank(u: number, n: number): number {
    if (n !== this.n) {
      this.zetan = this.zeta(n);
      this.eta = (1 - detPow(2 / n, 1 - this.theta)) / (1 - this.head[2]! / this.zetan);
      this.n = n;
    }
    const uz = u * this.zetan;
    if (uz < 1) return 0;
    if (n <= 2) return n - 1;
    if (uz < this.head[2]!) return 1; // 1 + 0.5^θ
    const v = this.eta * u - this.eta + 1;
    const r = Math.floor(n * detPow(v > 0 ? v : 0, this.alpha));
    return r < n ? r : n - 1;
  }
}

function checkTheta(theta: number): void {
  if (typeof theta !== 'number' || !(theta > 0 && theta < 1)) {
    throw new RangeError(`theta must be a number with 0 < theta < 1 (Gray's zipfian needs θ ≠ 1), got ${theta}`);
  }
}

/** FNV-1a 64 of the 8 little-endian bytes of rank, mod space (space <= MAX_RECORDS). */
export function fnvMod(rank: number, space: number): number {
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  let rh = hiOf(rank);
  let rl = rank >>> 0;
  for (let i = 0; i < 8; i++) {
    lo = (lo ^ (rl & 0xff)) >>> 0;
    rl = ((rl >>> 8) | (rh << 24)) >>> 0;
    rh >>>= 8;
    // × 0x100000001b3 = × 2^40 + × 0x1b3
    const p = lo * 0x1b3;
    const plo = p >>> 0;
    hi = (Math.imul(hi, 0x1b3) + (p - plo) * TWO_M32 + (lo << 8)) >>> 0;
    lo = plo;
  }
  // (hi·2^32 + lo) mod space, 16 bits at a time: r < 2^37 keeps r·2^16 + 2^16 below 2^53.
  let r = hi % space;
  r = (r * 65536 + (lo >>> 16)) % space;
  return (r * 65536 + (lo & 0xffff)) % space;
}

// ---- keys and values ------------------------------------------------------------------------------

/** prefix + n in decimal, zero-padded to width digits ("user000000000042"). */
export function formatKey(n: number, width: number, prefix = 'user'): string {
  const digits = String(n);
  if (!Number.isSafeInteger(n) || n < 0 || digits.length > width) {
    throw new RangeError(`key ${n} does not fit in ${width} digits (a record number 0 .. ${10 ** width - 1} is needed)`);
  }
  return prefix + digits.padStart(width, '0');
}

/** The 8-byte binary key of record n: n as a little-endian u64 (the hash map hashes it itself). */
export function binaryKey(n: number): Buffer {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`record number must be a safe non-negative integer, got ${n}`);
  const b = Buffer.alloc(8);
  b.writeUInt32LE(n >>> 0, 0);
  b.writeUInt32LE(hiOf(n), 4);
  return b;
}

const VALUE_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const VALUE_CODES = Uint8Array.from(VALUE_ALPHABET, (c) => c.charCodeAt(0));

/**
 * The value of record n at version v: size printable bytes (so string-decoding clients keep them
 * intact), a splitmix64 stream seeded with mix64(n) ^ mix64(v ^ 0x5851f42d4c957f2d), each output
 * giving 8 bytes (low byte first, 6 bits each).
 */
export function valueBytes(n: number, version: number, size: number): Buffer {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`record number must be a safe non-negative integer, got ${n}`);
  if (!Number.isSafeInteger(version) || version < 0) throw new RangeError(`version must be a safe non-negative integer, got ${version}`);
  if (!Number.isInteger(size) || size < 0 || size > MAX_VALUE_SIZE) throw new RangeError(`value size must be 0 .. ${MAX_VALUE_SIZE}, got ${size}`);
  mix64(hiOf(n), n >>> 0);
  let sh = wide[0]!;
  let sl = wide[1]!;
  mix64((hiOf(version) ^ 0x5851f42d) >>> 0, ((version >>> 0) ^ 0x4c957f2d) >>> 0);
  sh = (sh ^ wide[0]!) >>> 0;
  sl = (sl ^ wide[1]!) >>> 0;
  const out = Buffer.allocUnsafe(size);
  for (let i = 0; i < size; ) {
    const s = sl + 0x7f4a7c15;
    sl = s >>> 0;
    sh = (sh + 0x9e3779b9 + (s - sl) * TWO_M32) >>> 0;
    mix64(sh, sl);
    let w = wide[1]!;
    for (let b = 0; b < 8 && i < size; b++, i++) {
      if (b === 4) w = wide[0]!;
      out[i] = VALUE_CODES[w & 63]!;
      w >>>= 8;
    }
  }
  return out;
}

// ---- the workload -----------------------------------------------------------------------------------

// Op mix in parts per 1000, in draw order READ, UPDATE, INSERT, SCAN, RMW (YCSB's workload files).
const OP_ORDER: readonly OpName[] = ['READ', 'UPDATE', 'INSERT', 'SCAN', 'RMW'];
const MIX: Readonly<Record<WorkloadName, readonly number[]>> = {
  A: [500, 500, 0, 0, 0],
  B: [950, 50, 0, 0, 0],
  C: [1000, 0, 0, 0, 0],
  D: [950, 0, 50, 0, 0],
  E: [0, 0, 50, 950, 0],
  F: [500, 0, 0, 0, 500],
};
const MAX_SCAN_LENGTH = 100;
// After this many draws above the inserted count, take the draw mod the count (only reachable when
// a tiny load faces a large expected-insert space): keeps next() bounded.
const MAX_REDRAWS = 64;

/** A seeded YCSB run: call next() for each op; keyOf/valueOf give the bytes to send. */
export class Workload {
  readonly workload: WorkloadName;
  readonly distribution: Distribution;
  readonly recordCount: number;
  readonly operationCount: number | undefined;
  readonly seed: bigint;
  readonly keyWidth: number;
  readonly keyPrefix: string;
  readonly valueSize: number;
  readonly theta: number;
  /** Key space of the scrambled zipfian: recordCount + 2 × the expected inserts (as YCSB). */
  readonly zipfianSpace: number;
  private readonly rng: Xoshiro256;
  private readonly zipf: Zipfian | undefined;
  private readonly cumulative: number[];
  private inserted: number;
  private seqNext = 0;

  constructor(options: WorkloadOptions) {
    const o = validate(options);
    this.workload = o.workload;
    this.distribution = o.distribution;
    this.recordCount = o.recordCount;
    this.operationCount = o.operationCount;
    this.seed = o.seed;
    this.keyWidth = o.keyWidth;
    this.keyPrefix = o.keyPrefix;
    this.valueSize = o.valueSize;
    this.theta = o.theta;
    this.zipfianSpace = o.zipfianSpace;
    this.rng = new Xoshiro256(o.seed);
    this.zipf = o.distribution === 'uniform' ? undefined : new Zipfian(o.theta);
    let sum = 0;
    this.cumulative = MIX[o.workload].map((w) => (sum += w));
    this.inserted = o.recordCount;
  }

  /** Records that exist after the ops generated so far (load + inserts). */
  get insertedCount(): number {
    return this.inserted;
  }

  /** Ops generated so far. */
  get generated(): number {
    return this.seqNext;
  }

  /** True when operationCount ops were generated. */
  get done(): boolean {
    return this.operationCount !== undefined && this.seqNext >= this.operationCount;
  }

  /** The next op. Throws when operationCount ops were already generated. */
  next(): YcsbOp {
    if (this.done) throw new RangeError(`workload exhausted: all ${this.operationCount} operations were generated`);
    const seq = this.seqNext++;
    const draw = this.rng.nextBelow(1000);
    let which = 0;
    while (draw >= this.cumulative[which]!) which++;
    const op = OP_ORDER[which]!;
    if (op === 'INSERT') return { seq, op, key: this.inserted++, scanLength: undefined, version: seq + 1 };
    const key = this.chooseKey();
    if (op === 'SCAN') return { seq, op, key, scanLength: 1 + this.rng.nextBelow(MAX_SCAN_LENGTH), version: undefined };
    return { seq, op, key, scanLength: undefined, version: op === 'READ' ? undefined : seq + 1 };
  }

  /** The remaining ops (endless without operationCount). */
  *ops(): IterableIterator<YcsbOp> {
    while (!this.done) yield this.next();
  }

  /** Load phase: record numbers 0 .. recordCount − 1, each to be written as valueOf(n, 0). */
  *loadKeys(): IterableIterator<number> {
    for (let n = 0; n < this.recordCount; n++) yield n;
  }

  /** The string key of record n (fixed width). */
  keyOf(n: number): string {
    return formatKey(n, this.keyWidth, this.keyPrefix);
  }

  /** The 8-byte binary key of record n (little-endian u64). */
  binaryKeyOf(n: number): Buffer {
    return binaryKey(n);
  }

  /** valueSize bytes: record n's value at `version` (0 = as loaded). */
  valueOf(n: number, version: number): Buffer {
    return valueBytes(n, version, this.valueSize);
  }

  private chooseKey(): number {
    const n = this.inserted;
    if (this.distribution === 'uniform') return this.rng.nextBelow(n);
    const zipf = this.zipf!;
    if (this.distribution === 'latest') return n - 1 - zipf.rank(this.rng.nextDouble(), n);
    // Scrambled zipfian over a fixed space, so hot keys stay put while inserts grow the table;
    // draws that land on keys not inserted yet are drawn again (YCSB does the same).
    let key = 0;
    for (let i = 0; i < MAX_REDRAWS; i++) {
      key = fnvMod(zipf.rank(this.rng.nextDouble(), this.zipfianSpace), this.zipfianSpace);
      if (key < n) return key;
    }
    return key % n;
  }
}

/** Creates a workload; throws RangeError / TypeError naming the bad option. */
export function createWorkload(options: WorkloadOptions): Workload {
  return new Workload(options);
}

interface Validated {
  workload: WorkloadName;
  distribution: Distribution;
  recordCount: number;
  operationCount: number | undefined;
  seed: bigint;
  keyWidth: number;
  keyPrefix: string;
  valueSize: number;
  theta: number;
  zipfianSpace: number;
}

function integerIn(name: string, v: unknown, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new RangeError(`${name} must be an integer ${min} .. ${max}, got ${String(v)}`);
  }
  return v;
}

function validate(o: WorkloadOptions): Validated {
  if (o === null || typeof o !== 'object') throw new TypeError('createWorkload needs an options object');
  const workload = o.workload;
  if (typeof workload !== 'string' || !(workload in MIX)) {
    throw new RangeError(`unknown workload ${JSON.stringify(workload)} (expected one of A, B, C, D, E, F)`);
  }
  const distribution = o.distribution ?? (workload === 'D' ? 'latest' : 'zipfian');
  if (distribution !== 'uniform' && distribution !== 'zipfian' && distribution !== 'latest') {
    throw new RangeError(`unknown distribution ${JSON.stringify(distribution)} (expected uniform, zipfian or latest)`);
  }
  const recordCount = integerIn('recordCount', o.recordCount, 1, MAX_RECORDS);
  const operationCount =
    o.operationCount === undefined ? undefined : integerIn('operationCount', o.operationCount, 0, MAX_OPERATIONS);
  let seed: bigint;
  if (typeof o.seed === 'bigint') {
    if (o.seed < 0n || o.seed > MASK64) throw new RangeError(`seed must be 0 .. 2^64 - 1, got ${o.seed}`);
    seed = o.seed;
  } else {
    seed = BigInt(integerIn('seed', o.seed, 0, Number.MAX_SAFE_INTEGER));
  }
  const keyWidth = integerIn('keyWidth', o.keyWidth ?? 12, 1, MAX_KEY_WIDTH);
  const keyPrefix = o.keyPrefix ?? 'user';
  if (typeof keyPrefix !== 'string') throw new TypeError('keyPrefix must be a string');
  const valueSize = integerIn('valueSize', o.valueSize ?? 100, 1, MAX_VALUE_SIZE);
  const theta = o.theta ?? 0.99;
  checkTheta(theta);
  const insertPerMille = MIX[workload][2]!;
  // YCSB sizes the zipfian key space for 2× the expected inserts; unbounded runs get recordCount.
  const twice = (operationCount ?? 0) * insertPerMille * 2; // < 2^53: exact, and so is the division below
  const expectedInserts = insertPerMille === 0 ? 0 : operationCount === undefined ? recordCount : (twice - (twice % 1000)) / 1000;
  const zipfianSpace = Math.min(recordCount + expectedInserts, MAX_RECORDS);
  const lastKey = recordCount - 1 + (insertPerMille === 0 ? 0 : operationCount ?? 0);
  if (String(lastKey).length > keyWidth) {
    throw new RangeError(`keyWidth ${keyWidth} is too small: record ${lastKey} needs ${String(lastKey).length} digits`);
  }
  return { workload, distribution, recordCount, operationCount, seed, keyWidth, keyPrefix, valueSize, theta, zipfianSpace };
}
