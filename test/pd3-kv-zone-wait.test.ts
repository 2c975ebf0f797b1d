// pd3-kv-zone-wait.test.ts — pd3 mode's batched zone misses (ZoneMissPath.fetchAll): a miss waits
// up to --zone-wait-us for its Loading Zone item, is then read, and the first of the item and the
// read settles it, exactly once. The host and remote memory are stand-ins that the test drives.
import { describe, expect, it } from 'vitest';
import type { Pd3Host } from '../dist/host/index.js';
import { RecordMiss, type MissOutcome } from '../dist/examples/pd3-kv/miss-path.js';
import { recordBytes, writeRecord } from '../dist/examples/pd3-kv/record.js';
import type { RemotePages } from '../dist/examples/pd3-kv/remote-pages.js';
import { KvStats } from '../dist/examples/pd3-kv/stats.js';
import { ZoneMissPath } from '../dist/examples/pd3-kv/zone-miss-path.js';
import { FakeZone } from './fake-zone.js';

const PAGE = 4096;

/** Remote memory whose reads stay pending until the test answers them. */
class FakeRemote {
  readonly pageSize = PAGE;
  readonly reads: Array<{ address: number; resolve: (b: Buffer) => void; reject: (e: Error) => void }> = [];
  read(address: number): Promise<Buffer> {
    return new Promise((resolve, reject) => this.reads.push({ address, resolve, reject }));
  }
  kick(): void {}
}

function record(key: string, value: string): Buffer {
  const b = Buffer.alloc(recordBytes(key.length, value.length));
  writeRecord(b, 0, Buffer.from(key), Buffer.from(value));
  return b;
}

function setup(waitUs: number) {
  const zone = new FakeZone();
  const remote = new FakeRemote();
  const stats = new KvStats();
  const path = new ZoneMissPath(zone as unknown as Pd3Host, remote as unknown as RemotePages, stats, waitUs);
  const settled: Array<[string, MissOutcome]> = [];
  const misses = ['a', 'b', 'c'].map((k, i) => new RecordMiss(Buffer.from(k), i * 1000, recordBytes(1, 5)));
  const run = (): Promise<void> => path.fetchAll(misses, (m, v) => settled.push([m.key.toString(), v]));
  return { zone, remote, stats, settled, run };
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));
const value = (v: MissOutcome): string => (v instanceof Buffer ? v.toString() : String(v));

describe('pd3-kv zone misses of a batch (fetchAll)', () => {
  it('items already in the zone settle at once, and nothing is read', async () => {
    const t = setup(1_000_000);
    for (const k of ['a', 'b', 'c']) t.zone.put(k, Buffer.from(`zone-${k}`));
    await t.run();
    expect(t.settled.map(([k, v]) => [k, value(v)])).toEqual([['a', 'zone-a'], ['b', 'zone-b'], ['c', 'zone-c']]);
    expect(t.remote.reads).toHaveLength(0);
    expect([t.stats.zoneHits, t.stats.remoteReads]).toEqual([3, 0]);
  });

  it('items that land during the wait settle the batch without a read', async () => {
    const t = setup(1_000_000); // a second: the items come long before
    const done = t.run();
    await turn();
    t.zone.put('b', Buffer.from('zone-b'));
    await turn();
    t.zone.put('a', Buffer.from('zone-a'));
    t.zone.put('c', Buffer.from('zone-c'));
    await done;
    expect(t.settled.map(([k]) => k)).toEqual(['b', 'a', 'c']);
    expect(t.remote.reads).toHaveLength(0);
  });

  it('after the wait the rest is read; the zone and the read race, and each miss settles once', async () => {
    const t = setup(0);
    t.zone.put('a', Buffer.from('zone-a'));
    const done = t.run();
    // 'a' came from the zone; 'b' and 'c' are read at once (no wait).
    expect(t.remote.reads.map((r) => r.address)).toEqual([1000, 2000]);
    // 'b': the read answers first.
    t.remote.reads[0]!.resolve(record('b', 'remot'));
    await turn();
    // 'c': its item lands before its read answers; the late read is counted as overtaken.
    t.zone.put('c', Buffer.from('zone-c'));
    await done;
    t.remote.reads[1]!.resolve(record('c', 'remot'));
    await turn();
    await turn();
    expect(t.settled.map(([k, v]) => [k, value(v)])).toEqual([['a', 'zone-a'], ['b', 'remot'], ['c', 'zone-c']]);
    expect([t.stats.zoneHits, t.stats.remoteReads, t.stats.readsOvertaken]).toEqual([2, 2, 1]);
  });

  it('a read that fails settles its miss with the error (the command then replies with it)', async () => {
    const t = setup(0);
    t.zone.put('a', Buffer.from('zone-a'));
    t.zone.put('b', Buffer.from('zone-b'));
    const done = t.run();
    t.remote.reads[0]!.reject(new Error('server down'));
    await done;
    const c = t.settled.find(([k]) => k === 'c')!;
    expect(c[1]).toBeInstanceOf(Error);
    expect((c[1] as Error).message).toBe('server down');
    expect(t.settled).toHaveLength(3);
  });

  it('a read of a record that holds another key settles with null (an index collision)', async () => {
    const t = setup(0);
    t.zone.put('a', Buffer.from('zone-a'));
    t.zone.put('c', Buffer.from('zone-c'));
    const done = t.run();
    t.remote.reads[0]!.resolve(record('x', 'other'));
    await done;
    expect(t.settled.find(([k]) => k === 'b')![1]).toBeNull();
  });
});
