// numbers.ts — integers and floats as Redis reads and writes them: 64-bit signed integers written
// in canonical decimal (no sign on zero, no leading zeros, no spaces). INCRBYFLOAT's floats are in
// long-double.ts.

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
