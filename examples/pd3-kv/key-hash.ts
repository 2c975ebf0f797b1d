// key-hash.ts — the 64-bit key hash of pd3-kv's index: two 32-bit lanes of a murmur3-style mix over
// the key bytes, crossed at the end so every output bit depends on both lanes.

/** A 64-bit hash as two unsigned 32-bit halves (a reused out-parameter: no allocation per key). */
export interface KeyHash {
  hi: number;
  lo: number;
}

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;
const C3 = 0x85ebca6b;
const C4 = 0xc2b2ae35;

function rotl(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h;
}

/** Hashes `key` into `out`. Deterministic across processes and runs (no random seed: the index is
 *  local to one process, so seeding would buy nothing against a client choosing colliding keys
 *  that the exact key check on local records does not already handle). */
export function hashKey(key: Uint8Array, out: KeyHash): void {
  const n = key.length;
  let h1 = 0x9747b28c ^ n;
  let h2 = 0x5bd1e995 ^ n;
  const whole = n & ~3;
  for (let i = 0; i < whole; i += 4) {
    const k = key[i]! | (key[i + 1]! << 8) | (key[i + 2]! << 16) | (key[i + 3]! << 24);
    h1 ^= Math.imul(rotl(Math.imul(k, C1), 15), C2);
    h1 = (Math.imul(rotl(h1, 13), 5) + 0xe6546b64) | 0;
    h2 ^= Math.imul(rotl(Math.imul(k, C3), 17), C4);
    h2 = (Math.imul(rotl(h2, 11), 5) + 0x38b34ae5) | 0;
  }
  let t = 0;
  switch (n & 3) {
    case 3:
      t ^= key[whole + 2]! << 16;
    // falls through
    case 2:
      t ^= key[whole + 1]! << 8;
    // falls through
    case 1:
      t ^= key[whole]!;
      h1 ^= Math.imul(rotl(Math.imul(t, C1), 15), C2);
      h2 ^= Math.imul(rotl(Math.imul(t, C3), 17), C4);
  }
  h1 = (h1 + h2) | 0;
  h2 = (h2 + h1) | 0;
  h1 = fmix(h1);
  h2 = fmix(h2);
  h1 = (h1 + h2) | 0;
  h2 = (h2 + h1) | 0;
  out.hi = h1 >>> 0;
  out.lo = h2 >>> 0;
}
