// batched-miss-path.ts — mode async, after Redy: the misses of every request that ran during one turn
// of the event loop are issued together, as back-to-back reads the host library packs into one frame
// per memory server, and the next batch goes out without waiting for this one (pipelining).
//
// Redy gives each application thread an I/O thread that drives RDMA and polls completions. Here that
// role is the host library's direct-mode transport, driven from this event loop: the batch is issued
// in a setImmediate callback (after the turn's request handlers queued their misses), one poll sends
// it, and the Pd3Host pump completes the responses. No thread of its own, so this measures batching
// and pipelining, not the core Redy spends on polling (README.md, "Modes").
import type { MissPath } from './miss-path.js';
import type { PageRemote } from './remote-pages.js';
import type { PageServerStats } from './stats.js';

// A miss waiting for the next batch.
interface Queued {
  id: number;
  resolve: (page: Buffer) => void;
  reject: (e: unknown) => void;
}

/** Misses collected per event-loop turn, sent in batches of at most `maxBatch` reads. */
export class BatchedMissPath implements MissPath {
  private queue: Queued[] = [];
  private scheduled = false;

  constructor(
    private readonly remote: PageRemote,
    private readonly stats: PageServerStats,
    private readonly maxBatch: number,
  ) {}

  immediate(): undefined {
    return undefined;
  }

  fetch(id: number): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      this.queue.push({ id, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => this.issue());
    });
  }

  private issue(): void {
    this.scheduled = false;
    const queued = this.queue;
    this.queue = [];
    for (let at = 0; at < queued.length; at += this.maxBatch) {
      for (const q of queued.slice(at, at + this.maxBatch)) this.remote.readPage(q.id).then(q.resolve, q.reject);
      this.stats.readBatches++;
      this.remote.kick(); // one frame per server for the batch
    }
  }
}
