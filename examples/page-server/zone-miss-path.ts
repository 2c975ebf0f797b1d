// zone-miss-path.ts — mode pd3: on a miss, checkAndReturn(page key) first; the remote read through
// the agent only when the agent's prefetch has not brought the page into the Loading Zone.
import { performance } from 'node:perf_hooks';
import type { Pd3Host, ZoneWait } from 'pd3/host';
import type { MissPath } from './miss-path.js';
import { PAGE_SIZE } from './page-content.js';
import { pageKey } from './page-record.js';
import type { PageRemote } from './remote-pages.js';
import type { FlushObserver } from './write-back.js';

/**
 * Why a Loading Zone item is the page's newest bytes: the store asks only about a page that is not
 * cached and whose last eviction write has completed. The agent took that write from the request
 * ring before it was answered, and withdrew the page's zone items and cancelled its earlier
 * prefetches when it did (docs/architecture.md §8); prefetches it sends later reach the memory server
 * behind the write. So an item present now holds what that write wrote.
 *
 * That argument needs the write to have gone through an agent. With a direct fallback
 * (memservers given), a write issued while the agent is down goes around it and withdraws nothing,
 * so such pages are kept out of the zone path until a later write of theirs goes through the agent.
 */
export class ZoneMissPath implements MissPath, FlushObserver {
  private readonly dest = Buffer.allocUnsafe(PAGE_SIZE);
  private readonly aroundAgent = new Set<number>();
  // Misses whose wait ended without their item, and when it began: their read looks in the zone once
  // more when it comes back, so that a wait too short to see items land still learns how late they
  // come (an item found then is dropped: the read has the same bytes).
  private readonly gaveUp = new Map<number, number>();

  constructor(
    private readonly host: Pd3Host,
    private readonly remote: PageRemote,
    /** How long a miss waits for its zone item before it is read (0: not at all); told how long
     *  the items that landed took. */
    private readonly wait: ZoneWait,
  ) {}

  immediate(id: number): Buffer | undefined {
    if (this.aroundAgent.has(id)) return undefined;
    const n = this.host.checkAndReturn(pageKey(id), this.dest);
    // 0 is a miss; anything but a whole page (an error status, a short item) is read remotely.
    return n === PAGE_SIZE ? Buffer.from(this.dest) : undefined;
  }

  awaitZone(id: number): Promise<Buffer | undefined> {
    const waitUs = this.wait.us;
    if (waitUs === 0 || this.aroundAgent.has(id)) return Promise.resolve(undefined);
    const start = performance.now();
    return new Promise((resolve) => {
      // Polls on setImmediate: other calls keep being served between looks.
      const look = (): void => {
        const page = this.immediate(id);
        const waitedUs = (performance.now() - start) * 1000;
        if (page !== undefined) {
          this.wait.landed(waitedUs);
          resolve(page);
        } else if (waitedUs >= waitUs) {
          this.gaveUp.set(id, start);
          resolve(undefined);
        } else {
          setImmediate(look);
        }
      };
      setImmediate(look);
    });
  }

  fetch(id: number): Promise<Buffer> {
    const read = this.remote.readPage(id);
    this.remote.kick();
    const start = this.gaveUp.get(id);
    if (start === undefined) return read;
    this.gaveUp.delete(id);
    return read.then((page) => {
      if (this.immediate(id) !== undefined) this.wait.landed((performance.now() - start) * 1000);
      return page;
    });
  }

  // Asked after the host library chose the path: it sends around the agent only while the heartbeat
  // is stale, and a stale heartbeat stays stale until the agent beats again.
  flushIssued(id: number): void {
    if (this.host.agentAlive()) {
      this.aroundAgent.delete(id);
    } else if (this.host.stats().agent_attaches > 0) {
      // Only a segment an agent has served can hold zone items at all.
      this.aroundAgent.add(id);
    }
  }
}
