// pd3-kv's RemotePages.settled: what close() waits on so that a named log's region, allocated but
// not yet named in the pool, gets its record before the host and the pool session close (else a
// restart allocates another instead of finding it). A fake region source stands for the pool.
import { describe, expect, it } from 'vitest';
import type { AllocatedRegion, Pd3Host } from '../dist/host/index.js';
import { RemotePages } from '../dist/examples/pd3-kv/remote-pages.js';

// Only poll() is used by allocateRegionFor (to send what was queued).
const host = { poll: () => 0 } as unknown as Pd3Host;

/** A region source whose answers the test releases by hand. */
function heldSource(): { source: (i: number, b: number) => Promise<AllocatedRegion>; release: (ok: boolean) => void } {
  const waiting: Array<(ok: boolean) => void> = [];
  return {
    source: (index) =>
      new Promise((resolve, reject) =>
        waiting.push((ok) => (ok ? resolve({ region: 100 + index, capacity: 4096 }) : reject(new Error('refused'))))),
    release: (ok) => waiting.shift()!(ok),
  };
}

describe('pd3-kv RemotePages.settled', () => {
  it('waits for every allocation under way, whether it succeeds or fails', async () => {
    const held = heldSource();
    const pages = new RemotePages(host, 1024, 4096, held.source);
    const first = pages.allocateRegionFor(0);
    const second = pages.allocateRegionFor(4);  // page 4: the second region
    second.catch(() => {});
    let settled = false;
    const done = pages.settled(5000).then(() => (settled = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(settled).toBe(false);
    held.release(true);
    await first;
    await new Promise((r) => setTimeout(r, 20));
    expect(settled).toBe(false);  // the second is still under way
    held.release(false);
    await done;
    expect(pages.hasRegionFor(0)).toBe(true);
    expect(pages.hasRegionFor(4)).toBe(false);
  });

  it('gives up after its timeout, and resolves at once with nothing under way', async () => {
    const held = heldSource();
    const pages = new RemotePages(host, 1024, 4096, held.source);
    const t0 = Date.now();
    await pages.settled(1000);
    expect(Date.now() - t0).toBeLessThan(500);
    void pages.allocateRegionFor(0);
    const t1 = Date.now();
    await pages.settled(100);
    expect(Date.now() - t1).toBeGreaterThanOrEqual(90);
    held.release(true);
  });
});
