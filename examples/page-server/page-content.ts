// page-content.ts — what a page holds: bytes determined by its id and version, so a client can check
// every page it reads against a model of versions without keeping copies of the pages.

/** Bytes per page. */
export const PAGE_SIZE = 4096;
// u64 id and u64 version, little-endian, before the generated words.
const STAMP_BYTES = 16;

/** What a page says it is. */
export interface PageStamp {
  id: number;
  version: number;
}

const TWO_32 = 2 ** 32;

/** The page `id` at `version` (0 = as the server loads it at start): the stamp (u64 id, u64 version,
 *  little-endian), then little-endian 32-bit words of an xorshift32 stream seeded from both. */
export function pageContent(id: number, version: number): Buffer {
  const bytes = new ArrayBuffer(PAGE_SIZE);
  const view = new DataView(bytes);
  const idHi = Math.floor(id / TWO_32) >>> 0;
  const versionHi = Math.floor(version / TWO_32) >>> 0;
  view.setUint32(0, id >>> 0, true);
  view.setUint32(4, idHi, true);
  view.setUint32(8, version >>> 0, true);
  view.setUint32(12, versionHi, true);
  let x = seed(id >>> 0, idHi, version >>> 0, versionHi);
  for (let at = STAMP_BYTES; at < PAGE_SIZE; at += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    view.setUint32(at, x >>> 0, true);
  }
  return Buffer.from(bytes);
}

/** The stamp at the start of `page`, or null when it is not a page of safe-integer id and version. */
export function pageStamp(page: Uint8Array): PageStamp | null {
  if (page.length !== PAGE_SIZE) return null;
  const view = new DataView(page.buffer, page.byteOffset, page.byteLength);
  const idHi = view.getUint32(4, true);
  const versionHi = view.getUint32(12, true);
  if (idHi >= 1 << 21 || versionHi >= 1 << 21) return null; // above 2^53
  return { id: idHi * TWO_32 + view.getUint32(0, true), version: versionHi * TWO_32 + view.getUint32(8, true) };
}

// A non-zero 32-bit seed from the four words (murmur3's finaliser over a running mix).
function seed(a: number, b: number, c: number, d: number): number {
  let h = 0x9e3779b9;
  for (const w of [a, b, c, d]) {
    h = Math.imul(h ^ w, 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
  }
  return h === 0 ? 1 : h;
}
