// write-back.ts — eviction flushes: every page leaving the cache is written back to its slot in remote
// memory (clean ones too: the agent learns from the write that the host no longer holds the page,
// docs/architecture.md §8), one write per page at a time, retried until it succeeds. Until then the page's
// newest bytes are kept here and served from here.
import { PAGE_SIZE } from './page-content.js';
import { encodePageRecord } from './page-record.js';
import type { PageRemote } from './remote-pages.js';
import type { PageServerStats } from './stats.js';

/** Told right after a page's eviction write was handed to the host library (mode pd3 tracks which
 *  writes went around the agent). */
export interface FlushObserver {
  flushIssued(id: number): void;
}

// One page waiting to be durable.
interface Pending {
  record: Buffer;
  /** Bumped by every eviction of the page; the entry goes once the newest one is written. */
  seq: number;
  inflight: boolean;
  retryMs: number;
}

const FIRST_RETRY_MS = 10;
const LAST_RETRY_MS = 1000;

/** Eviction writes, ordered per page. */
export class WriteBack {
  private readonly pending = new Map<number, Pending>();
  private idleWaiters: Array<() => void> = [];
  private retryTimers = new Set<NodeJS.Timeout>();
  private closed = false;

  constructor(
    private readonly remote: PageRemote,
    private readonly stats: PageServerStats,
    private readonly observer: FlushObserver | null,
  ) {}

  /** Pages whose newest eviction is not durable yet. */
  get size(): number {
    return this.pending.size;
  }

  /** Writes `page` back as page `id` (copied: the caller may reuse it). A page evicted again while its
   *  previous write is in flight is written once more after it, with the newest bytes. */
  flush(id: number, page: Uint8Array): void {
    const record = encodePageRecord(id, page);
    const entry = this.pending.get(id);
    if (entry !== undefined) {
      entry.record = record;
      entry.seq++;
      if (!entry.inflight) this.issue(id, entry);
      return;
    }
    const fresh: Pending = { record, seq: 0, inflight: false, retryMs: FIRST_RETRY_MS };
    this.pending.set(id, fresh);
    this.issue(id, fresh);
  }

  /** The newest bytes of a page whose eviction write is not done (a view), or undefined. */
  page(id: number): Buffer | undefined {
    const entry = this.pending.get(id);
    return entry === undefined ? undefined : entry.record.subarray(entry.record.length - PAGE_SIZE);
  }

  /** Resolves once nothing is waiting to be written. */
  idle(): Promise<void> {
    if (this.pending.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stops retrying (shutdown): writes in flight complete or fail, nothing is issued again. */
  close(): void {
    this.closed = true;
    for (const t of this.retryTimers) clearTimeout(t);
    this.retryTimers.clear();
  }

  private issue(id: number, entry: Pending): void {
    if (this.closed) return;
    const seq = entry.seq;
    entry.inflight = true;
    const observer = this.observer;
    this.remote.writeRecord(id, entry.record, observer === null ? undefined : () => observer.flushIssued(id)).then(
      () => {
        entry.inflight = false;
        entry.retryMs = FIRST_RETRY_MS;
        this.stats.flushes++;
        if (entry.seq !== seq) this.issue(id, entry);
        else this.done(id);
      },
      () => {
        // Not written (agent or server down, ring full too long): the bytes stay here and are
        // served from here; try again later, newest bytes first.
        entry.inflight = false;
        this.stats.flushRetries++;
        const timer = setTimeout(() => {
          this.retryTimers.delete(timer);
          this.issue(id, entry);
        }, entry.retryMs);
        this.retryTimers.add(timer);
        entry.retryMs = Math.min(entry.retryMs * 2, LAST_RETRY_MS);
      },
    );
    this.remote.kick();
  }

  private done(id: number): void {
    this.pending.delete(id);
    if (this.pending.size > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}
