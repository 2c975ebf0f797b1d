// page-server-zone-wait.test.ts — mode pd3's bounded wait for a page's Loading Zone item
// (ZoneMissPath.awaitZone): the item that lands during the wait is returned; without one the wait
// ends after --zone-wait-us; pages written around the agent are never waited for.
import { describe, expect, it } from 'vitest';
import type { Pd3Host } from '../dist/host/index.js';
import { PAGE_SIZE } from '../dist/examples/page-server/page-content.js';
import { pageKey } from '../dist/examples/page-server/page-record.js';
import type { PageRemote } from '../dist/examples/page-server/remote-pages.js';
import { ZoneMissPath } from '../dist/examples/page-server/zone-miss-path.js';
import { FakeZone } from './fake-zone.js';

const noRemote = {} as PageRemote;
const turn = (): Promise<void> => new Promise((r) => setImmediate(r));


describe('page server, mode pd3: waiting for the zone item', () => {
  it('returns the item that lands during the wait', async () => {
    const zone = new FakeZone();
    const path = new ZoneMissPath(zone as unknown as Pd3Host, noRemote, 1_000_000);
    const waited = path.awaitZone(7);
    await turn();
    await turn();
    zone.put(pageKey(7), Buffer.alloc(PAGE_SIZE, 7));
    const page = await waited;
    expect(page?.length).toBe(PAGE_SIZE);
    expect(page?.[0]).toBe(7);
    expect(zone.looks).toBeGreaterThanOrEqual(2);
  });

  it('gives up after the wait without an item, and does not wait at all with 0', async () => {
    const zone = new FakeZone();
    const start = performance.now();
    expect(await new ZoneMissPath(zone as unknown as Pd3Host, noRemote, 2000).awaitZone(3)).toBeUndefined();
    expect(performance.now() - start).toBeGreaterThanOrEqual(2);
    const looks = zone.looks;
    expect(await new ZoneMissPath(zone as unknown as Pd3Host, noRemote, 0).awaitZone(3)).toBeUndefined();
    expect(zone.looks).toBe(looks);
  });

  it('never waits for a page whose last write went around the agent', async () => {
    const zone = new FakeZone();
    const path = new ZoneMissPath(zone as unknown as Pd3Host, noRemote, 1_000_000);
    path.flushIssued(9); // the agent is down: the write goes direct and withdraws no zone item
    zone.put(pageKey(9), Buffer.alloc(PAGE_SIZE, 1));
    expect(await path.awaitZone(9)).toBeUndefined();
    expect(zone.looks).toBe(0);
  });
});
