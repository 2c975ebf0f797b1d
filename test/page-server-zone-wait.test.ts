// page-server-zone-wait.test.ts — mode pd3's bounded wait for a page's Loading Zone item
// (ZoneMissPath.awaitZone): the item that lands during the wait is returned; without one the wait
// ends after --zone-wait-us; pages written around the agent are never waited for; and what the
// wait is told of landing times, also of items that land after it gave up.
import { describe, expect, it } from 'vitest';
import { FixedZoneWait, type Pd3Host, type ZoneWait } from '../dist/host/index.js';
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
    const path = new ZoneMissPath(zone as unknown as Pd3Host, noRemote, new FixedZoneWait(1_000_000));
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
    expect(await new ZoneMissPath(zone as unknown as Pd3Host, noRemote, new FixedZoneWait(2000)).awaitZone(3)).toBeUndefined();
    expect(performance.now() - start).toBeGreaterThanOrEqual(2);
    const looks = zone.looks;
    expect(await new ZoneMissPath(zone as unknown as Pd3Host, noRemote, new FixedZoneWait(0)).awaitZone(3)).toBeUndefined();
    expect(zone.looks).toBe(looks);
  });

  it('never waits for a page whose last write went around the agent', async () => {
    const zone = new FakeZone();
    const path = new ZoneMissPath(zone as unknown as Pd3Host, noRemote, new FixedZoneWait(1_000_000));
    path.flushIssued(9); // the agent is down: the write goes direct and withdraws no zone item
    zone.put(pageKey(9), Buffer.alloc(PAGE_SIZE, 1));
    expect(await path.awaitZone(9)).toBeUndefined();
    expect(zone.looks).toBe(0);
  });

  it('tells its wait when items land: during the wait, and found by the read of a miss that gave up', async () => {
    const reports: number[] = [];
    const wait: ZoneWait = { us: 2000, landed: (us: number) => void reports.push(us) };
    const zone = new FakeZone();
    let answer: (page: Buffer) => void = () => {};
    const remote = { readPage: () => new Promise<Buffer>((r) => (answer = r)), kick: () => {} } as unknown as PageRemote;
    const path = new ZoneMissPath(zone as unknown as Pd3Host, remote, wait);
    // Lands during the wait.
    const waited = path.awaitZone(1);
    await turn();
    zone.put(pageKey(1), Buffer.alloc(PAGE_SIZE, 1));
    expect((await waited)?.[0]).toBe(1);
    expect(reports).toHaveLength(1);
    // Lands after the wait gave up, before the read came back: the read finds it, and reports
    // the time from the start of the wait.
    expect(await path.awaitZone(2)).toBeUndefined();
    const read = path.fetch(2);
    zone.put(pageKey(2), Buffer.alloc(PAGE_SIZE, 2));
    answer(Buffer.alloc(PAGE_SIZE, 9));
    expect((await read)[0]).toBe(9); // the read's bytes serve the call
    expect(reports).toHaveLength(2);
    expect(reports[1]).toBeGreaterThanOrEqual(2000);
    // Never lands: nothing reported. A read of a miss that did not wait reports nothing either.
    expect(await path.awaitZone(3)).toBeUndefined();
    const none = path.fetch(3);
    answer(Buffer.alloc(PAGE_SIZE, 3));
    await none;
    zone.put(pageKey(4), Buffer.alloc(PAGE_SIZE, 4));
    const direct = path.fetch(4);
    answer(Buffer.alloc(PAGE_SIZE, 4));
    await direct;
    expect(reports).toHaveLength(2);
  });
});

