// hpack-huffman.ts — decodes Huffman-coded HPACK string literals (RFC 7541 §5.2, Appendix B).
import { HUFFMAN_CODES, HUFFMAN_EOS } from './hpack-huffman-table.js';

/** Internal nodes of the code tree: a complete prefix code over 257 symbols has 256. */
const NODES = 256;

/** Marks a tree edge that leads to a symbol rather than to another node: the edge holds
 *  LEAF_BASE - symbol, which is always negative. */
const LEAF_BASE = -1;

/** The code as a binary tree: node n's children are at [2n] (bit 0) and [2n + 1] (bit 1); a value
 *  >= 0 is the next node, a negative one a leaf (LEAF_BASE - symbol). Node 0 is the root. */
function buildTree(): Int32Array {
  const edges = new Int32Array(2 * NODES);
  let nodes = 1;
  HUFFMAN_CODES.forEach(([code, bits], symbol) => {
    let node = 0;
    for (let i = bits - 1; i >= 0; i--) {
      const slot = 2 * node + ((code >>> i) & 1);
      if (i === 0) {
        edges[slot] = LEAF_BASE - symbol;
      } else {
        let next = edges[slot] ?? 0;
        // 0 means "not yet created": no edge ever points back at the root.
        if (next === 0) {
          next = nodes++;
          edges[slot] = next;
        }
        node = next;
      }
    }
  });
  return edges;
}

/** Bits of a NIBBLE_STEPS entry: the node after the nibble (low 8 bits), whether a symbol ended in
 *  it, that symbol, and whether the nibble ran into EOS. A nibble can end at most one symbol, since
 *  the shortest code has 5 bits. */
const EMITS = 0x100;
const SYMBOL_SHIFT = 9;
const HIT_EOS = 0x20000;

/** Decoding four bits at a time: entry 16n + v is the step from node n on nibble v. */
const NIBBLE_STEPS = new Int32Array(NODES * 16);
/** Nodes where a string may end: the root, or 1..7 one-bits into a code, which is a prefix of EOS
 *  and so valid padding (§5.2). */
const MAY_END = new Uint8Array(NODES);

(function buildDecoder(): void {
  const tree = buildTree();
  for (let node = 0; node < NODES; node++) {
    for (let nibble = 0; nibble < 16; nibble++) {
      let at = node;
      let step = 0;
      for (let shift = 3; shift >= 0; shift--) {
        const next = tree[2 * at + ((nibble >>> shift) & 1)] ?? 0;
        if (next >= 0) {
          at = next;
          continue;
        }
        const symbol = LEAF_BASE - next;
        step |= symbol === HUFFMAN_EOS ? HIT_EOS : EMITS | (symbol << SYMBOL_SHIFT);
        at = 0;
      }
      NIBBLE_STEPS[16 * node + nibble] = step | at;
    }
  }
  MAY_END[0] = 1;
  for (let node = 0, depth = 1; depth <= 7; depth++) {
    node = tree[2 * node + 1] ?? 0;
    MAY_END[node] = 1;
  }
})();

/** Reused output space, grown as needed: decoded octets only live until they become a string. */
let scratch = new Uint8Array(256);

/** Decodes `src[start, end)` as a Huffman-coded string, returned as latin1 (one character per
 *  octet). Returns null when the input is not a valid encoding: it contains EOS, or its padding is
 *  longer than 7 bits or not a prefix of EOS (all ones) — both decoding errors per §5.2. */
export function huffmanDecode(src: Uint8Array, start: number, end: number): string | null {
  // The shortest code is 5 bits, so n input octets give at most 8n/5 symbols.
  const most = Math.ceil(((end - start) * 8) / 5);
  if (scratch.length < most) scratch = new Uint8Array(Math.max(most, 2 * scratch.length));
  const out = scratch;
  let produced = 0;
  let node = 0;
  for (let at = start; at < end; at++) {
    const octet = src[at] ?? 0;
    const high = NIBBLE_STEPS[16 * node + (octet >>> 4)] ?? HIT_EOS;
    if (high & HIT_EOS) return null;
    if (high & EMITS) out[produced++] = high >>> SYMBOL_SHIFT;
    const low = NIBBLE_STEPS[16 * (high & 0xff) + (octet & 0x0f)] ?? HIT_EOS;
    if (low & HIT_EOS) return null;
    if (low & EMITS) out[produced++] = low >>> SYMBOL_SHIFT;
    node = low & 0xff;
  }
  if (!MAY_END[node]) return null;
  return Buffer.from(out.buffer, 0, produced).toString('latin1');
}
