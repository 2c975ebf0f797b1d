// command.ts — the shape of a pd3-kv command: its arity and key positions (as COMMAND reports
// them, and as async mode uses to fetch a batch's records up front) and its implementation.
import type { KvStore } from './kv-store.js';
import type { ReplyBuffer } from './reply-buffer.js';
import type { Session } from './session.js';
import type { ServerView } from './server-view.js';

/** MULTI/EXEC/DISCARD as the executor implements them (EXEC runs the queued commands next). */
export interface Transactions {
  multi(): void;
  exec(): void;
  discard(): void;
}

/** What a command runs with. */
export interface CommandContext {
  readonly store: KvStore;
  readonly out: ReplyBuffer;
  readonly session: Session;
  readonly server: ServerView;
  readonly transactions: Transactions;
}

/** One command. `run` must read every value it needs before it changes anything: a read of a
 *  record not in memory throws RecordMiss and the command is run again once it is fetched. */
export interface Command {
  /** Lower-case name. */
  readonly name: string;
  /** Redis arity: N > 0 exactly N words (name included), -N at least N. */
  readonly arity: number;
  /** COMMAND flags, e.g. "write", "readonly", "fast". */
  readonly flags: readonly string[];
  /** First key, last key (negative: from the end) and step, 0 0 0 without keys. */
  readonly keys: readonly [first: number, last: number, step: number];
  /** The keys whose values it reads, for fetching ahead (async mode); by default none. */
  readonly reads?: (args: readonly Buffer[]) => Buffer[];
  run(ctx: CommandContext, args: readonly Buffer[]): void;
}
