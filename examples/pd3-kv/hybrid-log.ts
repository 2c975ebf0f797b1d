// hybrid-log.ts — pd3-kv's hybrid log (FASTER/Garnet style): records appended to fixed-size pages;
// the tail page takes appends, older pages are read-only and stay in memory until the flusher has
// written them to remote memory and drops them. A log address is page * pageSize + offset.
import { HEADER_BYTES, recordBytes, recordHasKey, recordValue, writeRecord } from './record.js';

/** Told when pages leave the tail, and when FLUSHALL discards them. */
export interface LogListener {
  /** `page` became read-only: it may be flushed. */
  sealed(page: number): void;
  /** Every page below `page` was discarded: no index entry refers to them any more. */
  discarded(page: number): void;
}

const EMPTY = Buffer.alloc(0);

/** The pages of the log that are in local memory, and the tail. */
export class HybridLog {
  readonly pageSize: number;
  /** Told about sealed and discarded pages (the flusher); null in local mode. */
  listener: LogListener | null = null;
  private readonly resident = new Map<number, Buffer>();
  private readonly usedBytes = new Map<number, number>(); // record bytes of each read-only page
  private tail: Buffer;
  private tailNo = 0;
  private tailOffset = 0;

  constructor(pageSize: number) {
    this.pageSize = pageSize;
    this.tail = Buffer.allocUnsafe(pageSize);
    this.resident.set(0, this.tail);
  }

  /** Largest value a record with a key of `keyBytes` can hold (a record never spans pages). */
  maxValueBytes(keyBytes: number): number {
    return this.pageSize - HEADER_BYTES - keyBytes;
  }

  /** Appends a record; returns its address. `value` null appends a tombstone. The caller checked
   *  the sizes against maxValueBytes. */
  append(key: Uint8Array, value: Uint8Array | null): number {
    const v = value ?? EMPTY;
    const n = recordBytes(key.length, v.length);
    if (n > this.pageSize) throw new RangeError(`record of ${n} bytes exceeds the ${this.pageSize}-byte page`);
    if (this.tailOffset + n > this.pageSize) this.seal();
    const at = this.tailOffset;
    this.tailOffset += writeRecord(this.tail, at, key, v);
    return this.tailNo * this.pageSize + at;
  }

  /** A resident page's buffer, or undefined once it was dropped. */
  page(no: number): Buffer | undefined {
    return this.resident.get(no);
  }

  /** Record bytes of a read-only page (what a flush writes). */
  recordBytesOf(no: number): number {
    return this.usedBytes.get(no) ?? 0;
  }

  /** Whether the record at `address` holds `key`; undefined if its page is not resident. */
  keyMatches(address: number, key: Uint8Array): boolean | undefined {
    const no = Math.floor(address / this.pageSize);
    const p = this.resident.get(no);
    return p === undefined ? undefined : recordHasKey(p, address - no * this.pageSize, key);
  }

  /** The value at `address` if its page is resident. */
  value(address: number): Buffer | undefined {
    const no = Math.floor(address / this.pageSize);
    const p = this.resident.get(no);
    return p === undefined ? undefined : recordValue(p, address - no * this.pageSize);
  }

  /** Forgets a read-only page's local copy (the flusher calls this once the page is durable). */
  drop(no: number): void {
    if (no >= this.tailNo) throw new RangeError(`page ${no} is the tail or beyond: it cannot be dropped`);
    this.resident.delete(no);
    this.usedBytes.delete(no);
  }

  /** Discards every page (FLUSHALL): appends continue on a fresh page after the old tail, so
   *  addresses only grow and a page already written to remote memory is never reused. */
  startOver(): void {
    this.resident.clear();
    this.usedBytes.clear();
    this.tailNo++;
    this.tailOffset = 0;
    this.tail = Buffer.allocUnsafe(this.pageSize);
    this.resident.set(this.tailNo, this.tail);
    this.listener?.discarded(this.tailNo);
  }

  /** The page taking appends. */
  get tailPage(): number {
    return this.tailNo;
  }

  /** The address the next record would get if it fits in the tail page. */
  get tailAddress(): number {
    return this.tailNo * this.pageSize + this.tailOffset;
  }

  /** Pages in local memory (the tail included). */
  get residentPages(): number {
    return this.resident.size;
  }

  private seal(): void {
    this.usedBytes.set(this.tailNo, this.tailOffset);
    const sealed = this.tailNo;
    this.tailNo++;
    this.tailOffset = 0;
    this.tail = Buffer.allocUnsafe(this.pageSize);
    this.resident.set(this.tailNo, this.tail);
    this.listener?.sealed(sealed);
  }
}
