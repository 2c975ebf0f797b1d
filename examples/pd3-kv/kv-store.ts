// kv-store.ts — pd3-kv's key-value semantics over the hybrid log, the index and the expiry table:
// every write appends a record and repoints the index; a read takes the record from a local page,
// from the records fetched for the current batch, or asks the mode's miss path.
import { hashKey, type KeyHash } from './key-hash.js';
import { KeyIndex, MAX_ADDRESS } from './key-index.js';
import type { HybridLog } from './hybrid-log.js';
import { Expiry } from './expiry.js';
import { RecordMiss, type MissPath } from './miss-path.js';
import { MAX_KEY_BYTES, recordBytes } from './record.js';
import { ReplyError } from './reply-error.js';
import type { KvStats } from './stats.js';

/** What a write does to the key's expiry: an absolute time (ms since the epoch), keep it, or none. */
export type TtlUpdate = bigint | 'keep' | 'none';

/** A fetched record: its value, null (the record holds another key), or why the read failed. */
export type Fetched = Buffer | null | Error;

/** The keyspace of one pd3-kv server (one database: SELECT 0 only). */
export class KvStore {
  readonly index: KeyIndex;
  readonly expiry = new Expiry();
  private readonly h: KeyHash = { hi: 0, lo: 0 };
  private probe: Uint8Array = Buffer.alloc(0);
  private readonly fetched = new Map<number, Fetched>();
  // Remote values read by the running command, copied to the tail once it completes: copying at
  // once would move the key's address, and a rerun after another miss could find the copy's page
  // flushed and dropped meanwhile and miss again, without end.
  private readonly readCopies: Array<{ key: Buffer; address: number; value: Buffer }> = [];
  // Hits and misses of the running command, counted once it completes (a rerun reads again).
  private localHits = 0;
  private hits = 0;
  private misses = 0;
  // Records in memory are compared exactly; a remote one is taken on its 64-bit hash (README).
  private readonly matches = (address: number): boolean => this.log.keyMatches(address, this.probe) ?? true;

  /** `copyReadsToTail`: a value read from a flushed page is appended again at the tail (FASTER's
   *  CopyReadsToTail), so the key is held locally as the agent's Host View then believes. */
  constructor(
    readonly log: HybridLog,
    private readonly missPath: MissPath | null,
    private readonly stats: KvStats,
    expectedKeys: number,
    private readonly copyReadsToTail: boolean,
  ) {
    this.index = new KeyIndex(expectedKeys);
  }

  /** Keys in the keyspace (expired ones count until they are noticed). */
  get size(): number {
    return this.index.size;
  }

  exists(key: Buffer): boolean {
    return this.lookup(key) >= 0;
  }

  /** The key's value, or null. Throws RecordMiss when the record must be fetched first.
   *  `forUpdate`: the caller writes the key next, so a remote value is not copied to the tail. */
  get(key: Buffer, forUpdate = false): Buffer | null {
    const slot = this.lookup(key);
    if (slot < 0) {
      this.misses++;
      return null;
    }
    const address = this.index.address(slot);
    const local = this.log.value(address);
    if (local !== undefined) {
      this.localHits++;
      this.hits++;
      return local;
    }
    let v = this.fetched.get(address);
    if (v === undefined) {
      if (this.missPath === null) throw new Error(`record at ${address} is not in memory and there is no remote memory`);
      v = this.missPath.immediate(key, address);
      if (v === undefined) throw new RecordMiss(key, address, this.index.recordLength(slot));
      this.fetched.set(address, v);
    }
    if (v instanceof Error) throw new ReplyError(`ERR remote memory read failed: ${v.message}`);
    if (v === null) {
      this.misses++;
      return null;
    }
    this.hits++;
    if (this.copyReadsToTail && !forUpdate) this.readCopies.push({ key, address, value: v });
    return v;
  }

  /** The running command completed: copies the remote values it read to the tail (unless it
   *  changed the key meanwhile). */
  commandDone(): void {
    for (const { key, address, value } of this.readCopies) {
      const slot = this.lookup(key);
      if (slot < 0 || this.index.address(slot) !== address) continue;
      const copy = this.log.append(key, value);
      this.index.update(slot, copy, recordBytes(key.length, value.length), this.index.hasTtl(slot));
    }
    this.readCopies.length = 0;
    this.stats.localHits += this.localHits;
    this.stats.keyspaceHits += this.hits;
    this.stats.keyspaceMisses += this.misses;
    this.localHits = this.hits = this.misses = 0;
  }

  /** The running command stopped at a miss or failed: it will run again, or not at all. */
  commandAborted(): void {
    this.readCopies.length = 0;
    this.localHits = this.hits = this.misses = 0;
  }

  /** Writes a value: a new record, and the index points at it. */
  set(key: Buffer, value: Uint8Array, ttl: TtlUpdate): void {
    this.checkRecord(key, value.length);
    const slot = this.lookup(key);
    const hadTtl = slot >= 0 && this.index.hasTtl(slot);
    const hasTtl = typeof ttl === 'bigint' || (ttl === 'keep' && hadTtl);
    const address = this.log.append(key, value);
    const length = recordBytes(key.length, value.length);
    if (slot >= 0) this.index.update(slot, address, length, hasTtl);
    else this.index.insert(this.h, address, length, hasTtl);
    if (typeof ttl === 'bigint') this.expiry.set(key.toString('latin1'), ttl);
    else if (hadTtl && !hasTtl) this.expiry.delete(key.toString('latin1'));
  }

  /** Deletes a key: appends a tombstone and forgets the key (README "Deletes"). */
  delete(key: Buffer): boolean {
    const slot = this.lookup(key);
    if (slot < 0) return false;
    this.remove(key, slot);
    return true;
  }

  /** The key's expiry time (ms since the epoch), null if it has none, undefined if it is absent. */
  expireTime(key: Buffer): bigint | null | undefined {
    const slot = this.lookup(key);
    if (slot < 0) return undefined;
    return this.index.hasTtl(slot) ? this.expiry.get(key.toString('latin1'))! : null;
  }

  /** Sets (a time) or clears (null) the key's expiry; false if the key is absent. The log is not
   *  touched: expiry lives beside the index, not in records. */
  setExpireTime(key: Buffer, atMs: bigint | null): boolean {
    const slot = this.lookup(key);
    if (slot < 0) return false;
    this.index.setTtl(slot, atMs !== null);
    if (atMs === null) this.expiry.delete(key.toString('latin1'));
    else this.expiry.set(key.toString('latin1'), atMs);
    // A time already past (GETEX ... EXAT 1) deletes the key at once, as Redis 7.0's GETEX does, so
    // DBSIZE stops counting it (Redis 7.0's SET with a past time keeps the key until touched: so does set()).
    if (atMs !== null && atMs <= BigInt(Date.now())) this.lookup(key);
    return true;
  }

  /** Throws the reply a write of this key and value size gets if the record format or the page
   *  size cannot hold it. */
  checkRecord(key: Uint8Array, valueBytes: number): void {
    if (key.length === 0) throw new ReplyError('ERR empty keys are not supported (a record needs a key of 1 byte or more)');
    if (key.length > MAX_KEY_BYTES) throw new ReplyError(`ERR key longer than ${MAX_KEY_BYTES} bytes`);
    if (valueBytes > this.log.maxValueBytes(key.length)) {
      throw new ReplyError(`ERR string exceeds maximum allowed size (a record must fit one ${this.log.pageSize}-byte log page)`);
    }
    if (this.log.tailAddress + this.log.pageSize > MAX_ADDRESS) throw new ReplyError('ERR the log is full');
  }

  /** The record to fetch before a batch reads `key`, or null if the key is absent or at hand. */
  toFetch(key: Buffer): RecordMiss | null {
    const slot = this.lookup(key);
    if (slot < 0) return null;
    const address = this.index.address(slot);
    if (this.log.value(address) !== undefined || this.fetched.has(address)) return null;
    return new RecordMiss(key, address, this.index.recordLength(slot));
  }

  /** Keeps a fetched record for the rest of the batch (addresses never change content). */
  addFetched(address: number, value: Fetched): void {
    this.fetched.set(address, value);
  }

  /** Forgets the fetched records (at the end of each batch). */
  clearFetched(): void {
    this.fetched.clear();
  }

  /** Deletes up to `budget` sampled keys whose expiry time has passed; returns how many. */
  expireSample(budget: number): number {
    let n = 0;
    for (const name of this.expiry.expiredSample(Date.now(), budget)) if (this.lookup(Buffer.from(name, 'latin1')) < 0) n++;
    return n;
  }

  /** FLUSHALL: forgets every key and discards the log's pages. */
  flushAll(): void {
    this.index.clear();
    this.expiry.clear();
    this.fetched.clear();
    this.log.startOver();
  }

  // The key's slot, or -1; a key whose expiry time has passed is deleted here (lazy expiry).
  private lookup(key: Uint8Array): number {
    hashKey(key, this.h);
    this.probe = key;
    const slot = this.index.find(this.h, this.matches);
    if (slot < 0 || !this.index.hasTtl(slot)) return slot;
    const at = this.expiry.get(Buffer.from(key.buffer, key.byteOffset, key.length).toString('latin1'));
    if (at === undefined || at > Date.now()) return slot;
    this.remove(key, slot);
    this.stats.expiredKeys++;
    return -1;
  }

  private remove(key: Uint8Array, slot: number): void {
    if (this.index.hasTtl(slot)) this.expiry.delete(Buffer.from(key.buffer, key.byteOffset, key.length).toString('latin1'));
    this.log.append(key, null);
    this.stats.tombstones++;
    this.index.remove(slot);
  }
}
