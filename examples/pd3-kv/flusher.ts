// flusher.ts — moves read-only log pages to remote memory when the resident log exceeds the memory
// budget: writes them strictly in page order, and drops a page's local copy only once it and every
// page before it are durable, so a key's newest record is the last one the memory server indexed.
import type { Logger } from 'pd3/cli';
import { Pd3Error } from 'pd3/host';
import type { HybridLog, LogListener } from './hybrid-log.js';
import type { KvStats } from './stats.js';
import type { RemotePages } from './remote-pages.js';

/** How much of the log stays local: a fixed byte budget, or a share of the log's size. */
export type MemoryBudget = { kind: 'bytes'; bytes: number } | { kind: 'percent'; percent: number };

/** Page writes in flight at once. */
const MAX_INFLIGHT = 8;
const RETRY_FIRST_MS = 50;
const RETRY_MAX_MS = 2000;
// While the agent is down requests fail at once without reaching anything: retrying often is free,
// and flushing resumes within this long of the agent's (re)start.
const AGENT_DOWN_RETRY_MS = 100;

/**
 * The flush policy. Why order matters: the memory server's index maps a key to the record it was
 * given last, and checkAndReturn hands out what that index says. Pages are therefore issued in
 * order and, after any failed write, every page from the failed one on is written again in order
 * (even those that succeeded), so the server never ends up indexing an older record of a key last.
 */
export class Flusher implements LogListener {
  private issued = 0; // next page to write
  private durable = 0; // every page below is durable or discarded
  private readonly done = new Set<number>(); // durable pages at or above `durable`
  private inflight = 0;
  private generation = 0; // bumped by a rewind: completions of older writes are ignored
  private waitingForRegion = false;
  private retryDelay = RETRY_FIRST_MS;
  private retryTimer: NodeJS.Timeout | null = null;
  private closed = false;
  private lastWarning = 0;

  constructor(
    private readonly log: HybridLog,
    private readonly remote: RemotePages,
    private readonly budget: MemoryBudget,
    private readonly stats: KvStats,
    private readonly logger: Logger,
  ) {}

  /** Every page below this one is durable in remote memory (or was discarded). */
  get durablePages(): number {
    return this.durable;
  }

  /** Pages the budget lets stay local, the tail included (at least 1). */
  keepPages(): number {
    const bytes = this.budget.kind === 'bytes' ? this.budget.bytes : (this.budget.percent / 100) * this.log.tailAddress;
    return Math.max(1, Math.floor(bytes / this.log.pageSize));
  }

  sealed(): void {
    this.pump();
  }

  discarded(page: number): void {
    // Pages not issued yet are never written: nothing refers to them. Writes in flight finish.
    for (let p = Math.max(this.issued, this.durable); p < page; ++p) this.done.add(p);
    this.issued = Math.max(this.issued, page);
    this.advance();
  }

  /** Stops issuing; writes in flight are left to the host's close. */
  close(): void {
    this.closed = true;
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }

  private pump(): void {
    if (this.closed || this.waitingForRegion || this.retryTimer !== null) return;
    const keep = this.keepPages();
    while (this.inflight < MAX_INFLIGHT && this.issued < this.log.tailPage && this.log.tailPage - this.issued + 1 > keep) {
      const page = this.issued;
      const bytes = this.log.page(page);
      if (bytes === undefined) {
        // Discarded by FLUSHALL after a rewind reached it: nothing to write.
        this.issued++;
        this.complete(page, this.generation);
        continue;
      }
      if (!this.remote.hasRegionFor(page)) {
        this.waitingForRegion = true;
        this.remote.allocateRegionFor(page).then(
          () => {
            this.waitingForRegion = false;
            this.retryDelay = RETRY_FIRST_MS;
            this.pump();
          },
          (e: unknown) => {
            this.waitingForRegion = false;
            this.retryLater('allocate', e);
          },
        );
        return;
      }
      this.issued++;
      this.inflight++;
      const gen = this.generation;
      this.stats.flushWrites++;
      this.remote.writePage(page, bytes.subarray(0, this.log.recordBytesOf(page))).then(
        () => {
          this.inflight--;
          this.retryDelay = RETRY_FIRST_MS;
          this.complete(page, gen);
          this.pump();
        },
        (e: unknown) => {
          this.inflight--;
          this.stats.flushFailures++;
          if (gen === this.generation) this.rewind(page);
          this.retryLater('write', e);
        },
      );
    }
    this.remote.kick();
  }

  private complete(page: number, gen: number): void {
    if (gen !== this.generation || page < this.durable) return;
    this.done.add(page);
    this.advance();
  }

  private advance(): void {
    while (this.done.has(this.durable)) {
      this.done.delete(this.durable);
      if (this.log.page(this.durable) !== undefined) {
        this.log.drop(this.durable);
        this.stats.flushedPages++;
      }
      this.durable++;
    }
  }

  private rewind(page: number): void {
    this.generation++;
    this.issued = Math.min(this.issued, page);
    for (const p of [...this.done]) if (p >= page) this.done.delete(p);
  }

  private retryLater(what: string, e: unknown): void {
    if (this.closed || this.retryTimer !== null) return;
    const now = Date.now();
    if (now - this.lastWarning > 5000) {
      this.lastWarning = now;
      this.logger.warn('flush.retry', `cannot ${what} remote memory for log pages: ${e instanceof Error ? e.message : String(e)}; retrying`, {
        retryMs: this.retryDelay,
      });
    }
    const agentDown = e instanceof Pd3Error && e.code === 'PD3_E_AGENT_DOWN';
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.pump();
    }, agentDown ? AGENT_DOWN_RETRY_MS : this.retryDelay);
    if (!agentDown) this.retryDelay = Math.min(RETRY_MAX_MS, this.retryDelay * 2);
  }
}
