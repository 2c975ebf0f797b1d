// numbers.ts — integers and floats as Redis reads and writes them: 64-bit signed integers written
// in canonical decimal (no sign on zero, no leading zeros, no spaces), and floats for INCRBYFLOAT.

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** The 64-bit integer written in `bytes`, or null if they are not one in canonical form. */
export function parseInt64(bytes: Uint8Array): bigint | null {
  const n = bytes.length;
  if (n === 0 || n > 20) return null;
  let i = 0;
  if (bytes[0] === 0x2d) {
    if (n === 1) return null;
    i = 1;
  }
  if (bytes[i] === 0x30 && n > i + 1) return null; // leading zero
  if (bytes[i] === 0x30 && i === 1) return null; // "-0"
  for (let j = i; j < n; ++j) {
    const c = bytes[j]!;
    if (c < 0x30 || c > 0x39) return null;
  }
  const v = BigInt(Buffer.from(bytes.buffer, bytes.byteOffset, n).toString('latin1'));
  return v < INT64_MIN || v > INT64_MAX ? null : v;
}

/** Whether `v` fits a signed 64-bit integer. */
export function inInt64(v: bigint): boolean {
  return v >= INT64_MIN && v <= INT64_MAX;
}

/** A command's integer argument as a JS number, or null if not an integer in [-(2^53-1), 2^53-1]. */
export function parseSafeInteger(bytes: Uint8Array): number | null {
  const v = parseInt64(bytes);
  if (v === null) return null;
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : null;
}

const FLOAT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** A finite float written in `bytes` (decimal, optional exponent), or null. */
export function parseFloatArg(bytes: Uint8Array): number | null {
  if (bytes.length === 0 || bytes.length > 5000) return null;
  const s = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('latin1');
  if (!FLOAT.test(s)) return null;
  const v = Number(s);
  return Number.isFinite(v) ? v : null;
}

/** A float in plain decimal without exponent or trailing zeros, as INCRBYFLOAT replies it. */
export function formatFloat(v: number): string {
  if (Object.is(v, -0)) return '0';
  const s = String(v); // the shortest text that reads back as v
  if (!s.includes('e')) return s;
  if (Math.abs(v) >= 1) return BigInt(v).toString(); // an integer-valued double beyond 1e21
  return v.toFixed(20).replace(/0+$/, '').replace(/\.$/, '');
}
