// long-double.ts — the x87 80-bit extended float ("long double" on x86-64 Linux) that Redis'
// INCRBYFLOAT computes in, emulated exactly with BigInt: strtold's parse (decimal and hex, correctly
// rounded to a 64-bit significand), one correctly rounded addition, and printf's "%.17Lf" (exact
// expansion rounded to 17 decimals, ties to even, as glibc does). JS numbers are doubles: 1.1 + 2.2
// in doubles is 3.3000000000000003, in long double then "%.17Lf" it is "3.3", Redis' answer.

/** A long double: ±m·2^e (m < 2^64; subnormals have m < 2^63), or ±infinity. NaN is never kept. */
export type LongDouble = { readonly neg: boolean; readonly m: bigint; readonly e: number } | { readonly neg: boolean; readonly inf: true };

const P = 64; // significand bits, integer bit included
const E_MIN = -16382 - (P - 1); // exponent of the smallest subnormal, 2^-16445
const E_MAX = 16383 - (P - 1); // exponent of the largest finite value's significand
const TWO_P = 1n << BigInt(P);
const TWO_P1 = 1n << BigInt(P - 1);
/** Redis' MAX_LONG_DOUBLE_CHARS: longer texts are not floats to it. */
const MAX_CHARS = 5 * 1024;
/** Decimal magnitudes beyond which a text surely overflows or underflows (saves huge powers). */
const MAX_DEC_MAG = 4940;
const MIN_DEC_MAG = -4970;

function bitLength(v: bigint): number {
  return v === 0n ? 0 : v.toString(2).length;
}

/** n·2^k / d (n, d > 0) rounded to nearest-even long double; null when it rounds to zero. */
function round(neg: boolean, n: bigint, k: number, d: bigint): LongDouble | null {
  let e = bitLength(n) + k - bitLength(d) - P;
  for (;;) {
    if (e < E_MIN) e = E_MIN;
    const num = e <= k ? n << BigInt(k - e) : n;
    const den = e >= k ? d << BigInt(e - k) : d;
    let q = num / den;
    const r = num - q * den;
    if (q >= TWO_P) {
      e++;
      continue;
    }
    if (q < TWO_P1 && e > E_MIN) {
      e--;
      continue;
    }
    if (2n * r > den || (2n * r === den && (q & 1n) === 1n)) q++;
    if (q === TWO_P) {
      q = TWO_P1;
      e++;
    }
    if (e > E_MAX) return { neg, inf: true };
    if (q === 0n) return null;
    return { neg, m: q, e };
  }
}

const DECIMAL = /^([+-]?)(?:(\d+)\.?(\d*)|\.(\d+))(?:[eE]([+-]?\d+))?$/;
const HEX = /^([+-]?)0[xX](?:([0-9a-fA-F]+)\.?([0-9a-fA-F]*)|\.([0-9a-fA-F]+))(?:[pP]([+-]?\d+))?$/;
const INF = /^([+-]?)(?:inf|infinity)$/i;

/** `text` as Redis' string2ld reads it (strtold, the whole text, no leading space, no NaN, no
 *  overflow to infinity, no underflow to zero), or null when Redis answers "not a valid float". */
export function parseLongDouble(text: string): LongDouble | null {
  if (text.length === 0 || text.length >= MAX_CHARS) return null;
  const inf = INF.exec(text);
  if (inf !== null) return { neg: inf[1] === '-', inf: true };
  let neg: boolean;
  let digits: bigint;
  let k: number; // value = digits · base^k
  let base: 2 | 10;
  let mag: number; // rough decimal (or binary) magnitude, to refuse absurd exponents early
  const hex = HEX.exec(text);
  if (hex !== null) {
    const int = hex[2] ?? '';
    const frac = hex[3] ?? hex[4] ?? '';
    neg = hex[1] === '-';
    digits = BigInt(`0x${int}${frac}`);
    const p = hex[5] === undefined ? 0 : Number(hex[5]);
    k = p - 4 * frac.length;
    base = 2;
    mag = (bitLength(digits) + k) / 3.33;
  } else {
    const dec = DECIMAL.exec(text);
    if (dec === null) return null;
    const int = dec[2] ?? '';
    const frac = dec[3] ?? dec[4] ?? '';
    neg = dec[1] === '-';
    digits = BigInt(int + frac);
    const x = dec[5] === undefined ? 0 : Number(dec[5]);
    k = x - frac.length;
    base = 10;
    mag = digits.toString().length + k;
  }
  if (digits === 0n) return { neg, m: 0n, e: 0 };
  if (!Number.isFinite(mag) || mag > MAX_DEC_MAG || mag < MIN_DEC_MAG) return null;
  let r: LongDouble | null;
  if (base === 2) r = round(neg, digits, k, 1n);
  else if (k >= 0) r = round(neg, digits * 10n ** BigInt(k), 0, 1n);
  else r = round(neg, digits, 0, 10n ** BigInt(-k));
  return r === null || 'inf' in r ? null : r;
}

/** a + b rounded once, as the FPU adds long doubles; null for NaN (∞ - ∞). */
export function addLongDouble(a: LongDouble, b: LongDouble): LongDouble | null {
  if ('inf' in a || 'inf' in b) {
    if ('inf' in a && 'inf' in b && a.neg !== b.neg) return null;
    return 'inf' in a ? a : b;
  }
  const e = Math.min(a.e, b.e);
  const sa = (a.m << BigInt(a.e - e)) * (a.neg ? -1n : 1n);
  const sb = (b.m << BigInt(b.e - e)) * (b.neg ? -1n : 1n);
  const sum = sa + sb;
  if (sum === 0n) return { neg: a.neg && b.neg, m: 0n, e: 0 }; // x + -x is +0 when rounding to nearest
  const neg = sum < 0n;
  // A nonzero sum of two long doubles is at least the smallest subnormal: never rounds to zero.
  return round(neg, neg ? -sum : sum, e, 1n)!;
}

const FRACTION_DIGITS = 17;
const SCALE = 10n ** BigInt(FRACTION_DIGITS);

/** `v` as Redis' ld2string(LD_STR_HUMAN) writes it: "%.17Lf" with trailing zeros (and a trailing
 *  ".") removed, and "-0" written "0". Infinity is never printed (INCRBYFLOAT refuses it first). */
export function formatLongDouble(v: LongDouble): string {
  if ('inf' in v) return v.neg ? '-inf' : 'inf';
  let text: string;
  if (v.e >= 0) {
    text = (v.m << BigInt(v.e)).toString();
  } else {
    const scaled = v.m * SCALE;
    const shift = BigInt(-v.e);
    let q = scaled >> shift;
    const r = scaled - (q << shift);
    const half = 1n << (shift - 1n);
    if (r > half || (r === half && (q & 1n) === 1n)) q++;
    const frac = (q % SCALE).toString().padStart(FRACTION_DIGITS, '0').replace(/0+$/, '');
    text = (q / SCALE).toString() + (frac === '' ? '' : `.${frac}`);
  }
  if (v.neg && text !== '0') return `-${text}`;
  return text;
}
