// executor.ts — runs the commands of every connection, one batch (what one read from a socket
// completed) at a time and in arrival order, one thread like a Garnet session thread. A command
// whose record is remote waits for it (the mode's miss path) and runs again; in async mode the
// misses of a whole batch are fetched together first. Replies of a batch leave in one write.
import type { Logger } from 'pd3/cli';
import { arityOk } from './command-table.js';
import type { Command, CommandContext, Transactions } from './command.js';
import type { KvStore } from './kv-store.js';
import { RecordMiss, type MissOutcome, type MissPath } from './miss-path.js';
import { ReplyBuffer } from './reply-buffer.js';
import { ReplyError } from './reply-error.js';
import type { ServerView } from './server-view.js';
import { Session } from './session.js';
import type { KvStats } from './stats.js';
import { TRANSACTION_CONTROL } from './commands-transactions.js';

/** The requests one read from a connection completed. */
export interface Batch {
  readonly session: Session;
  /** Requests in order; EXEC splices its queued commands in after itself. */
  readonly commands: Buffer[][];
  /** A framing error that ended the stream after these requests, or null. */
  readonly protocolError: string | null;
  /** Receives the batch's replies, in request order. */
  readonly deliver: (replies: Buffer) => void;
}

/** Runs batches one after the other. */
export class Executor implements CommandContext, Transactions {
  readonly out = new ReplyBuffer();
  readonly transactions: Transactions = this;
  session: Session = new Session();
  private readonly queue: Batch[] = [];
  private busy = false;
  private current: Batch | null = null;
  private currentIndex = 0;

  constructor(
    readonly store: KvStore,
    readonly server: ServerView,
    private readonly commands: ReadonlyMap<string, Command>,
    private readonly missPath: MissPath | null,
    private readonly stats: KvStats,
    private readonly logger: Logger,
  ) {}

  /** Whether no batch is running or waiting to run. */
  get idle(): boolean {
    return !this.busy;
  }

  /** Queues a batch; it runs at once if nothing else is running. */
  submit(batch: Batch): void {
    this.queue.push(batch);
    if (!this.busy) this.pump();
  }

  multi(): void {
    if (this.session.queued !== null) throw new ReplyError('ERR MULTI calls can not be nested');
    this.session.queued = [];
    this.session.aborted = false;
    this.out.simple('OK');
  }

  exec(): void {
    const s = this.session;
    const queued = s.queued;
    if (queued === null) throw new ReplyError('ERR EXEC without MULTI');
    s.queued = null;
    if (s.aborted) {
      s.aborted = false;
      throw new ReplyError('EXECABORT Transaction discarded because of previous errors.');
    }
    this.out.array(queued.length);
    // Run next, before anything else: the executor runs nothing else meanwhile, so it is atomic.
    this.current!.commands.splice(this.currentIndex + 1, 0, ...queued);
  }

  discard(): void {
    if (this.session.queued === null) throw new ReplyError('ERR DISCARD without MULTI');
    this.session.queued = null;
    this.session.aborted = false;
    this.out.simple('OK');
  }

  private pump(): void {
    this.busy = true;
    while (this.queue.length > 0) {
      const batch = this.queue.shift()!;
      const waiting = this.start(batch);
      if (waiting !== undefined) {
        waiting
          .catch((e: unknown) => this.logger.error('executor.failed', `batch failed: ${message(e)}`))
          .finally(() => {
            this.finish(batch);
            this.pump();
          });
        return;
      }
      this.finish(batch);
    }
    this.busy = false;
  }

  private start(batch: Batch): Promise<void> | void {
    const path = this.missPath;
    if (path?.batched === true) {
      const misses = this.plan(batch);
      if (misses.length > 0) {
        const fetched = path.fetchAll !== undefined
          ? path.fetchAll(misses, (miss, value) => this.settle(miss, value))
          : Promise.all(misses.map((miss) => this.fetch(miss)));
        path.kick();
        return fetched.then(() => this.runFrom(batch, 0));
      }
    }
    return this.runFrom(batch, 0);
  }

  // Every record the batch (and a transaction it may EXEC) will read and that is remote.
  private plan(batch: Batch): RecordMiss[] {
    const seen = new Set<number>();
    const misses: RecordMiss[] = [];
    const consider = (args: Buffer[]): void => {
      const cmd = this.commands.get(args[0]!.toString('latin1').toLowerCase());
      if (cmd?.reads === undefined || !arityOk(cmd, args.length)) return;
      for (const key of cmd.reads(args)) {
        const miss = this.store.toFetch(key);
        if (miss === null || seen.has(miss.address)) continue;
        seen.add(miss.address);
        misses.push(miss);
      }
    };
    for (const args of batch.commands) consider(args);
    for (const args of batch.session.queued ?? []) consider(args);
    return misses;
  }

  private runFrom(batch: Batch, from: number): Promise<void> | void {
    this.current = batch;
    for (let i = from; i < batch.commands.length && !batch.session.closing; ++i) {
      const mark = this.out.mark();
      const miss = this.runOne(batch, i, mark);
      if (miss !== null) {
        this.out.truncate(mark);
        const fetched = this.fetch(miss);
        this.missPath?.kick();
        return fetched.then(() => this.runFrom(batch, i));
      }
    }
  }

  // Runs one request; returns the RecordMiss it stopped at, or null once it has replied.
  private runOne(batch: Batch, i: number, mark: number): RecordMiss | null {
    const args = batch.commands[i]!;
    const name = args[0]!.toString('latin1').toLowerCase();
    const cmd = this.commands.get(name);
    this.session = batch.session;
    this.currentIndex = i;
    if (this.session.queued !== null && !TRANSACTION_CONTROL.has(name)) {
      this.enqueue(cmd, name, args);
      return null;
    }
    if (cmd === undefined) {
      this.out.error(unknownCommand(args));
      return null;
    }
    if (!arityOk(cmd, args.length)) {
      this.out.error(`ERR wrong number of arguments for '${name}' command`);
      return null;
    }
    try {
      cmd.run(this, args);
      this.store.commandDone();
      this.stats.commands++;
    } catch (e) {
      this.store.commandAborted();
      if (e instanceof RecordMiss) return e;
      this.out.truncate(mark);
      if (e instanceof ReplyError) {
        this.out.error(e.message);
      } else {
        this.logger.error('command.failed', `${name}: ${message(e)}`, e instanceof Error ? { stack: e.stack } : {});
        this.out.error(`ERR internal error in ${name}: ${message(e)}`);
      }
    }
    return null;
  }

  private enqueue(cmd: Command | undefined, name: string, args: Buffer[]): void {
    const s = this.session;
    if (cmd === undefined || !arityOk(cmd, args.length)) {
      s.aborted = true;
      this.out.error(cmd === undefined ? unknownCommand(args) : `ERR wrong number of arguments for '${name}' command`);
      return;
    }
    s.queued!.push(args);
    this.out.simple('QUEUED');
  }

  private fetch(miss: RecordMiss): Promise<void> {
    let p: Promise<Buffer | null>;
    try {
      p = this.missPath === null ? Promise.reject(new Error('no remote memory')) : this.missPath.fetch(miss.key, miss.address, miss.length);
    } catch (e) {
      p = Promise.reject(e);
    }
    return p.then(
      (v) => this.settle(miss, v),
      (e: unknown) => this.settle(miss, e instanceof Error ? e : new Error(String(e))),
    );
  }

  // Keeps what a fetch brought for the rest of the batch, counting collisions and failures.
  private settle(miss: RecordMiss, value: MissOutcome): void {
    if (value === null) this.stats.indexCollisions++;
    else if (value instanceof Error) this.stats.remoteReadFailures++;
    this.store.addFetched(miss.address, value);
  }

  private finish(batch: Batch): void {
    if (batch.protocolError !== null) {
      this.out.error(batch.protocolError);
      batch.session.closing = true;
    }
    this.current = null;
    this.store.clearFetched();
    batch.deliver(this.out.take());
  }
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function unknownCommand(args: Buffer[]): string {
  const rest = args.slice(1, 17).map((a) => `'${a.toString('latin1').slice(0, 128)}'`).join(' ');
  return `ERR unknown command '${args[0]!.toString('latin1').slice(0, 128)}', with args beginning with: ${rest}`;
}
