// key-index.ts — pd3-kv's key → log address index: open addressing with linear probing over one
// Uint32Array (no JS object per key, so it holds tens of millions of keys), doubling when ¾ full.
import type { KeyHash } from './key-hash.js';

// Words per slot: the key's fingerprint (hash.hi with bit 0 set, so 0 means empty), hash.lo (also
// the home slot), the address's high bits with the TTL flag in bit 31, its low 32 bits, and the
// record's length (so a remote read fetches exactly the record: see remote-record.ts).
const WORDS = 5;
const TTL_FLAG = 0x8000_0000;
const HIGH_MASK = 0x000f_ffff; // addresses are below 2^52
const TWO32 = 2 ** 32;
/** Largest log address an entry can hold. */
export const MAX_ADDRESS = 2 ** 52 - 1;
const MAX_LOAD = 0.75;
const MAX_SLOTS = 2 ** 30;

/** Tells whether the record at a log address holds the key being looked up. */
export type AddressCheck = (address: number) => boolean;

/**
 * Maps keys, known by their 64-bit hash, to the log address of their newest record. A lookup
 * passes a check that compares the actual key where the record is at hand; entries whose
 * fingerprint matches but whose record holds another key are skipped, so hash collisions among
 * records in memory are exact. Memory: 20 bytes per slot, between 27 and 54 bytes per key.
 */
export class KeyIndex {
  private slots: Uint32Array;
  private mask: number;
  private count = 0;
  private growAt: number;
  private readonly initialSlots: number;

  /** Sized so `expectedKeys` fit before the first doubling. */
  constructor(expectedKeys = 1 << 16) {
    this.initialSlots = slotsFor(expectedKeys);
    this.slots = new Uint32Array(this.initialSlots * WORDS);
    this.mask = this.initialSlots - 1;
    this.growAt = Math.floor(this.initialSlots * MAX_LOAD);
  }

  /** Keys held. */
  get size(): number {
    return this.count;
  }

  /** Slots allocated (a power of two). */
  get capacity(): number {
    return this.mask + 1;
  }

  /** Bytes of the slot array. */
  get bytes(): number {
    return this.slots.byteLength;
  }

  /** The slot of the key with hash `h` whose record passes `check`, or -1. */
  find(h: KeyHash, check: AddressCheck): number {
    const s = this.slots;
    const tag = (h.hi | 1) >>> 0;
    const lo = h.lo;
    let i = lo & this.mask;
    for (;;) {
      const at = i * WORDS;
      const t = s[at]!;
      if (t === 0) return -1;
      if (t === tag && s[at + 1] === lo && check(this.addressAt(at))) return i;
      i = (i + 1) & this.mask;
    }
  }

  /** Adds a key the caller has just failed to find; returns its slot (valid until the next insert). */
  insert(h: KeyHash, address: number, length: number, ttl: boolean): number {
    if (this.count + 1 > this.growAt) this.grow();
    const s = this.slots;
    let i = h.lo & this.mask;
    while (s[i * WORDS] !== 0) i = (i + 1) & this.mask;
    const at = i * WORDS;
    s[at] = (h.hi | 1) >>> 0;
    s[at + 1] = h.lo;
    this.put(at, address, length, ttl);
    this.count++;
    return i;
  }

  /** The address held in `slot`. */
  address(slot: number): number {
    return this.addressAt(slot * WORDS);
  }

  /** The length of the record `slot` points at. */
  recordLength(slot: number): number {
    return this.slots[slot * WORDS + 4]!;
  }

  /** Whether the key in `slot` has an expiry time (kept in the Expiry table). */
  hasTtl(slot: number): boolean {
    return (this.slots[slot * WORDS + 2]! & TTL_FLAG) !== 0;
  }

  /** Points `slot` at a newer record. */
  update(slot: number, address: number, length: number, ttl: boolean): void {
    this.put(slot * WORDS, address, length, ttl);
  }

  /** Sets or clears the TTL flag of `slot`. */
  setTtl(slot: number, ttl: boolean): void {
    const at = slot * WORDS + 2;
    const s = this.slots;
    s[at] = ttl ? (s[at]! | TTL_FLAG) >>> 0 : s[at]! & HIGH_MASK;
  }

  /** Removes the key in `slot`, shifting later entries of its probe run back (no tombstones, so
   *  lookups never slow down with deletes). */
  remove(slot: number): void {
    const s = this.slots;
    const mask = this.mask;
    let hole = slot;
    let j = slot;
    for (;;) {
      j = (j + 1) & mask;
      const at = j * WORDS;
      if (s[at] === 0) break;
      const home = s[at + 1]! & mask;
      // The entry at j may fill the hole if the hole lies on its probe path from home to j.
      if (((j - home) & mask) >= ((j - hole) & mask)) {
        s.copyWithin(hole * WORDS, at, at + WORDS);
        hole = j;
      }
    }
    s.fill(0, hole * WORDS, hole * WORDS + WORDS);
    this.count--;
  }

  /** Drops every key and shrinks back to the initial size. */
  clear(): void {
    this.slots = new Uint32Array(this.initialSlots * WORDS);
    this.mask = this.initialSlots - 1;
    this.growAt = Math.floor(this.initialSlots * MAX_LOAD);
    this.count = 0;
  }

  private addressAt(at: number): number {
    return (this.slots[at + 2]! & HIGH_MASK) * TWO32 + this.slots[at + 3]!;
  }

  private put(at: number, address: number, length: number, ttl: boolean): void {
    if (!(address >= 0 && address <= MAX_ADDRESS)) throw new RangeError(`log address ${address} out of range`);
    const high = Math.floor(address / TWO32);
    this.slots[at + 2] = (ttl ? high | TTL_FLAG : high) >>> 0;
    this.slots[at + 3] = address >>> 0;
    this.slots[at + 4] = length;
  }

  private grow(): void {
    const oldSlots = this.slots;
    const n = (this.mask + 1) * 2;
    if (n > MAX_SLOTS) throw new RangeError(`key index full: ${this.count} keys`);
    const s = new Uint32Array(n * WORDS);
    const mask = n - 1;
    for (let at = 0; at < oldSlots.length; at += WORDS) {
      if (oldSlots[at] === 0) continue;
      let i = oldSlots[at + 1]! & mask;
      while (s[i * WORDS] !== 0) i = (i + 1) & mask;
      const to = i * WORDS;
      s[to] = oldSlots[at]!;
      s[to + 1] = oldSlots[at + 1]!;
      s[to + 2] = oldSlots[at + 2]!;
      s[to + 3] = oldSlots[at + 3]!;
      s[to + 4] = oldSlots[at + 4]!;
    }
    this.slots = s;
    this.mask = mask;
    this.growAt = Math.floor(n * MAX_LOAD);
  }
}

function slotsFor(keys: number): number {
  let n = 16;
  while (n * MAX_LOAD < keys && n < MAX_SLOTS) n *= 2;
  return n;
}
