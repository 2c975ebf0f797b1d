// lz-reader.ts — checkAndReturn in pure TS over the mapped segment: the same algorithm as
// native/host/lz_consumer.cpp (see native/common/lz_view.hpp), without crossing into native code.
//
// Two differences, both to keep the hot path short (Atomics on a non-shared ArrayBuffer are calls
// into the runtime in V8, ~10 ns each, where the C++ loads are plain moves):
//  * The CAS is a 32-bit CAS on the low half of the 64-bit state word ((seq << 2) | state),
//    followed by a re-read of the high half. The word of a descriptor only takes the value
//    (seq, PRODUCED) during one interval of its history (FREE(seq) comes after it and the next
//    PRODUCED has a larger seq), and the high half never decreases, so an unchanged high half after
//    a successful low-half CAS proves the whole word was the one we read. Both accesses are
//    hardware-atomic against the agent's 64-bit RMWs on x86-64 and AArch64.
//  * No seqlock re-check of the descriptor fields: by the same argument a successful CAS proves
//    the word never left (seq, PRODUCED) since we read it, so the fields and the record bytes we
//    used were the item's. Garbage read from a reclaimed item can only cost a miss: every index is
//    bounds-checked by the typed arrays and chains must strictly decrease.
import { constants } from './native.js';
import { lzKeyHash } from './lz-hash.js';

const C = constants;
// Word (u32) and byte offsets inside descriptors and records, from the C structs.
const DESC_WORDS = C.SIZEOF_LZ_DESC / 4;
const D_STATE = C.LZ_DESC_STATE / 4;
const D_NEXT = C.LZ_DESC_NEXT_SEQ / 4;
const D_POS = C.LZ_DESC_DATA_POS / 4;
const D_HASH = C.LZ_DESC_KEY_HASH / 4;
const D_LEN = C.LZ_DESC_RECORD_LEN / 4;
const R_SEQ = C.LZ_RECORD_SEQ / 4;
const R_SIZE = C.LZ_RECORD_SIZE / 4;
const R_KEY_LEN = C.LZ_RECORD_KEY_LEN;
const R_HDR = C.SIZEOF_LZ_RECORD;
const STATE_BITS = C.LZ_STATE_BITS;
const STATE_MASK = (1 << STATE_BITS) - 1;
const align8 = (n: number): number => (n + 7) & ~7;
const E_INVAL = C.status.PD3_E_INVAL!;
const E_DEST_SMALL = C.status.PD3_E_DEST_SMALL!;

/** A consumer of one segment's Loading Zone. Any number may exist, in any thread. */
export class LoadingZoneReader {
  private readonly u8: Uint8Array;
  private readonly u32: Uint32Array;
  private readonly descWord: number; // u32 index of descriptor 0
  private readonly descMask: number;
  private readonly bucketWord: number; // u32 index of bucket 0
  private readonly bucketMask: number;
  private readonly dataByte: number; // byte offset of the data ring
  private readonly dataSize: number;
  private readonly dataMask: number;

  /** `segment` is the whole mapped segment (NativeHostHandle.segmentBuffer()). */
  constructor(segment: ArrayBuffer) {
    const view = new DataView(segment);
    const u64 = (field: keyof typeof C.control): number => Number(view.getBigUint64(C.control[field], true));
    const u32f = (field: keyof typeof C.control): number => view.getUint32(C.control[field], true);
    this.u8 = new Uint8Array(segment);
    this.u32 = new Uint32Array(segment);
    this.descWord = u64('lz_desc_offset') / 4;
    this.descMask = u32f('lz_desc_count') - 1;
    this.bucketWord = u64('lz_bucket_offset') / 4;
    this.bucketMask = u32f('lz_bucket_count') - 1;
    this.dataByte = u64('lz_data_offset');
    this.dataSize = u64('lz_data_size');
    this.dataMask = this.dataSize - 1;
  }

  /** As pd3_host_check_and_return: size on a hit, 0 on a miss, PD3_E_DEST_SMALL / PD3_E_INVAL. */
  checkAndReturn(key: Uint8Array, dest: Uint8Array): number {
    const keyLen = key.length;
    if (keyLen === 0 || keyLen > C.MAX_KEY_LEN) return E_INVAL;
    const { u8, u32 } = this;
    const hash = lzKeyHash(key);
    const b = this.bucketWord + (hash & this.bucketMask) * 2;
    // Plain reads: any value is validated against the descriptor's state word below.
    let seqLo = u32[b]!;
    let seqHi = u32[b + 1]!;
    for (let steps = 0; steps <= this.descMask; ++steps) {
      if (seqLo === 0 && seqHi === 0) return 0;
      const d = this.descWord + (seqLo & this.descMask) * DESC_WORDS;
      // Sequentially consistent load: the acquire that orders the reads of fields and bytes after it.
      const wLo = Atomics.load(u32, d + D_STATE);
      const wHi = u32[d + D_STATE + 1]!;
      // The word's seq is (wHi:wLo) >> STATE_BITS; compare it with (seqHi:seqLo) without 64-bit math.
      const state = wLo & STATE_MASK;
      const wordSeqLo = ((wLo >>> STATE_BITS) | (wHi << (32 - STATE_BITS))) >>> 0;
      if (wordSeqLo !== seqLo || wHi >>> STATE_BITS !== seqHi || state === C.LZ_FREE) return 0;
      const nextLo = u32[d + D_NEXT]!;
      const nextHi = u32[d + D_NEXT + 1]!;
      const posLo = u32[d + D_POS]!;
      const itemHash = u32[d + D_HASH]!;
      const recordLen = u32[d + D_LEN]!;
      if (state === C.LZ_PRODUCED && itemHash === hash) {
        const off = posLo & this.dataMask;
        if (off + recordLen <= this.dataSize) {
          const r = this.dataByte + off;
          const rw = r >>> 2;
          const size = u32[rw + R_SIZE]!;
          const recKeyLen = u8[r + R_KEY_LEN]! | (u8[r + R_KEY_LEN + 1]! << 8);
          if (u32[rw + R_SEQ]! === seqLo && u32[rw + R_SEQ + 1]! === seqHi && recKeyLen === keyLen &&
              recordLen === R_HDR + align8(keyLen) + align8(size) && this.sameKey(r + R_HDR, key)) {
            if (size > dest.length) return E_DEST_SMALL;
            const data = r + R_HDR + align8(keyLen);
            if (size <= 32) for (let i = 0; i < size; ++i) dest[i] = u8[data + i]!;
            else dest.set(u8.subarray(data, data + size));
            const consumed = ((wLo & ~STATE_MASK) | C.LZ_CONSUMED) >>> 0;
            // The high half is read after the CAS (which no later read can move above).
            if (Atomics.compareExchange(u32, d + D_STATE, wLo, consumed) === wLo && u32[d + D_STATE + 1] === wHi) {
              return size;
            }
          }
        }
      }
      if (nextHi > seqHi || (nextHi === seqHi && nextLo >= seqLo)) return 0; // chains strictly decrease
      seqLo = nextLo;
      seqHi = nextHi;
    }
    return 0;
  }

  private sameKey(at: number, key: Uint8Array): boolean {
    const u8 = this.u8;
    for (let i = 0; i < key.length; ++i) if (u8[at + i] !== key[i]) return false;
    return true;
  }
}

