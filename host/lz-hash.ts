// lz-hash.ts — TS port of pd3_lz_key_hash (native/include/pd3/wire.h), checked against it in tests.

const rotl = (x: number, r: number): number => (x << r) | (x >>> (32 - r));

/** The Loading Zone index hash of a key, as an unsigned 32-bit number. */
export function lzKeyHash(key: Uint8Array): number {
  const len = key.length;
  let h = (0x9e3779b9 ^ len) | 0;
  let i = 0;
  for (; i + 4 <= len; i += 4) {
    let w = key[i]! | (key[i + 1]! << 8) | (key[i + 2]! << 16) | (key[i + 3]! << 24);
    w = Math.imul(w, 0xcc9e2d51);
    w = rotl(w, 15);
    w = Math.imul(w, 0x1b873593);
    h ^= w;
    h = rotl(h, 13);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  let t = 0;
  for (let s = 0; i < len; ++i, s += 8) t |= key[i]! << s;
  t = Math.imul(t, 0xcc9e2d51);
  t = rotl(t, 15);
  t = Math.imul(t, 0x1b873593);
  h ^= t;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
