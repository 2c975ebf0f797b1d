// zone-miss-path.ts — full PD3 (mode pd3): checkAndReturn first, the out-of-core path only when the
// agent's prefetch has not brought the key into the Loading Zone.
import { performance } from 'node:perf_hooks';
import type { Pd3Host, ZoneWait } from 'pd3/host';
import type { MissOutcome, MissPath, RecordMiss } from './miss-path.js';
import { fetchRemoteRecord } from './remote-record.js';
import type { RemotePages } from './remote-pages.js';
import type { KvStats } from './stats.js';

/**
 * Why a Loading Zone item is the value pd3-kv wants: immediate() is only asked about a key whose
 * newest record (per the local index) is in a page that is durable and dropped. That page was the
 * last write holding the key (pages go out in order, see flusher.ts), the agent invalidated the
 * key's items when it took that write, and prefetches it sends afterwards read the server's copy
 * behind that write. So an item present now carries that record's value (docs/prefetcher.md).
 * That stays true while a batch waits: the executor runs nothing else meanwhile, so no command
 * writes a newer record of the key.
 *
 * Batches fetch their misses together, the way async mode does, with one difference: the agent
 * captured the batch's requests when the app received them, and its prefetches are usually in
 * flight. A miss therefore first waits up to `wait.us` for its item; what is still missing then
 * is read, and the zone and the read race on, the first answer serving the command. When the last
 * item that landed came is told to `wait`, which may learn from it (pd3/host's ZoneWait).
 */
export class ZoneMissPath implements MissPath {
  readonly batched = true;
  private readonly dest: Buffer;

  constructor(
    private readonly host: Pd3Host,
    private readonly remote: RemotePages,
    private readonly stats: KvStats,
    private readonly wait: ZoneWait,
  ) {
    this.dest = Buffer.allocUnsafe(remote.pageSize); // a record, hence its value, fits in a page
  }

  immediate(key: Buffer): Buffer | undefined {
    const n = this.host.checkAndReturn(key, this.dest);
    if (n <= 0) return undefined; // a miss, or an item too big for dest (then read it remotely)
    this.stats.zoneHits++;
    return Buffer.from(this.dest.subarray(0, n));
  }

  fetch(key: Buffer, address: number, length: number): Promise<Buffer | null> {
    return fetchRemoteRecord(this.remote, this.stats, address, length, key);
  }

  kick(): void {
    this.remote.kick();
  }

  fetchAll(misses: readonly RecordMiss[], settle: (miss: RecordMiss, value: MissOutcome) => void): Promise<void> {
    return new Promise((resolve) => {
      const done = new Array<boolean>(misses.length).fill(false);
      let open = misses.length;
      let start = 0; // set after the first look: items there already took no wait
      let lastLandedUs = -1; // when the last item that landed after the first look came
      const finish = (i: number, value: MissOutcome): boolean => {
        if (done[i]) return false;
        done[i] = true;
        settle(misses[i]!, value);
        if (--open === 0) {
          if (lastLandedUs >= 0) this.wait.landed(lastLandedUs);
          resolve();
        }
        return true;
      };
      let reading = false;
      const waitUs = this.wait.us;
      const lookInZone = (): void => {
        for (let i = 0; i < misses.length; ++i) {
          if (done[i]) continue;
          const v = this.immediate(misses[i]!.key);
          if (v === undefined) continue;
          if (start !== 0) lastLandedUs = (performance.now() - start) * 1000;
          finish(i, v);
          // Counted when the zone wins, not when the read comes back: a reader of the counters
          // after the batch's replies sees remote_reads and this together.
          if (reading) this.stats.readsOvertaken++;
        }
      };
      const read = (i: number): void => {
        const m = misses[i]!;
        this.fetch(m.key, m.address, m.length).then(
          (v) => finish(i, v),
          (e: unknown) => finish(i, e instanceof Error ? e : new Error(String(e))),
        );
      };
      lookInZone();
      if (open === 0) return;
      start = performance.now();
      // Polls on setImmediate, as the host library's pump does: the app has nothing else to run
      // while its batch waits, and the answer is tens of µs away.
      const tick = (): void => {
        if (open === 0) return;
        lookInZone();
        if (open === 0) return;
        if (!reading && (performance.now() - start) * 1000 >= waitUs) {
          reading = true;
          for (let i = 0; i < misses.length; ++i) if (!done[i]) read(i);
        }
        // While reads are out, take their answers on every turn: the batch waits for nothing else,
        // and the host library's own pump falls back to a 1 ms timer after 300 µs without one.
        if (reading) this.kick();
        setImmediate(tick);
      };
      if (waitUs === 0) tick();
      else setImmediate(tick);
    });
  }
}
