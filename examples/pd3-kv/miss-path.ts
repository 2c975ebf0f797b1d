// miss-path.ts — what pd3-kv does when a key's newest record is in a flushed page: the interface
// every mode implements, and the signal a command raises to wait for such a record.

/** How one mode serves records that are no longer in local memory. */
export interface MissPath {
  /** True: the executor gathers the misses of a whole received batch and fetches them together
   *  before running it (async mode); false: a command waits on each miss alone. */
  readonly batched: boolean;
  /** A value available without waiting on the network (a Loading Zone item, a prefetched page),
   *  or undefined. Called before the out-of-core path. */
  immediate(key: Buffer, address: number): Buffer | undefined;
  /** The out-of-core path: reads the `length`-byte record at `address`; null if it holds another key. */
  fetch(key: Buffer, address: number, length: number): Promise<Buffer | null>;
  /** Sends the reads queued by fetch() now rather than at the next turn of the event loop. */
  kick(): void;
  /** Batched modes that fetch a batch's misses their own way (pd3: the Loading Zone first, then
   *  reads): calls `settle` once for each miss (its value, null for another key's record, or the
   *  read's error) and resolves after the last. Absent: the executor fetch()es each miss. */
  fetchAll?(misses: readonly RecordMiss[], settle: (miss: RecordMiss, value: MissOutcome) => void): Promise<void>;
}

/** What settles a miss: the record's value, null (another key's record), or the read's error. */
export type MissOutcome = Buffer | null | Error;

/**
 * Raised (thrown) by the store when a command needs a record that is neither local nor fetched yet.
 * A control-flow signal, not an Error: no stack trace is captured. The executor fetches the record
 * and runs the command again; commands read everything before they change anything, so a rerun
 * has nothing to undo.
 */
export class RecordMiss {
  constructor(
    readonly key: Buffer,
    readonly address: number,
    readonly length: number,
  ) {}
}
