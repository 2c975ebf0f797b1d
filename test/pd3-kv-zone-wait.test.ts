// pd3-kv-zone-wait.test.ts — pd3 mode's batched zone misses (ZoneMissPath.fetchAll): a miss waits
// up to --zone-wait-us for its Loading Zone item, is then read, and the first of the item and the
// read settles it, exactly once; what a batch tells its ZoneWait; and --zone-wait-us auto
// (AdaptiveZoneWait) following the landing times. The host and remote memory are stand-ins that the
// test drives.
import { describe, expect, it } from 'vitest';
import type { Pd3Host } from '../dist/host/index.js';
import { RecordMiss, type MissOutcome } from '../dist/examples/pd3-kv/miss-path.js';
import { recordBytes, writeRecord } from '../dist/examples/pd3-kv/record.js';
import type { RemotePages } from '../dist/examples/pd3-kv/remote-pages.js';
import { KvStats } from '../dist/examples/pd3-kv/stats.js';
import { ZoneMissPath } from '../dist/examples/pd3-kv/zone-miss-path.js';
import { AdaptiveZoneWait, FixedZoneWait, zoneWaitFor, type ZoneWait } from '../dist/host/index.js';
import { parseKvCommand } from '../dist/examples/pd3-kv/config.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

/** A fixed wait that records what each batch reported. */
class RecordingWait implements ZoneWait {
  readonly reports: number[] = [];
  constructor(readonly us: number) {}
  landed(us: number): void {
    this.reports.push(us);
  }
}

function setup(waitUs: number | ZoneWait) {
  const zone = new FakeZone();
  const remote = new FakeRemote();
  const stats = new KvStats();
  const wait = typeof waitUs === 'number' ? new FixedZoneWait(waitUs) : waitUs;
  const path = new ZoneMissPath(zone as unknown as Pd3Host, remote as unknown as RemotePages, stats, wait);
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

  it('a batch tells its wait when its last landed item came, and only if one landed while it waited', async () => {
    // All there at the first look: nothing to learn.
    const present = new RecordingWait(1_000_000);
    const a = setup(present);
    for (const k of ['a', 'b', 'c']) a.zone.put(k, Buffer.from(`zone-${k}`));
    await a.run();
    expect(present.reports).toEqual([]);
    // Two land during the wait, some turns apart: one report, the later landing's time.
    const waiting = new RecordingWait(1_000_000);
    const b = setup(waiting);
    b.zone.put('a', Buffer.from('zone-a'));
    const done = b.run();
    await turn();
    b.zone.put('b', Buffer.from('zone-b'));
    await new Promise((r) => setTimeout(r, 5));
    b.zone.put('c', Buffer.from('zone-c'));
    await done;
    expect(waiting.reports).toHaveLength(1);
    expect(waiting.reports[0]).toBeGreaterThanOrEqual(4000);
    // Settled by reads alone (no wait, nothing ever lands): no report.
    const reads = new RecordingWait(0);
    const c = setup(reads);
    const running = c.run();
    for (const r of c.remote.reads) r.resolve(record('x', 'other'));
    await running;
    expect(reads.reports).toEqual([]);
  });
});

describe('--zone-wait-us auto (AdaptiveZoneWait)', () => {
  const { MIN_US, MAX_US } = AdaptiveZoneWait;

  it('starts at its floor and settles at twice a steady landing time', () => {
    const w = new AdaptiveZoneWait();
    expect(w.us).toBe(MIN_US);
    for (let i = 0; i < 100; ++i) w.landed(1100);
    expect(w.us).toBeGreaterThan(2100);
    expect(w.us).toBeLessThanOrEqual(2200);
  });

  it('stays within its floor and ceiling, and comes back down when items land faster', () => {
    const w = new AdaptiveZoneWait();
    for (let i = 0; i < 100; ++i) w.landed(20);
    expect(w.us).toBe(MIN_US);
    for (let i = 0; i < 100; ++i) w.landed(1_000_000_000); // one lost batch must not stall the next ones for long
    expect(w.us).toBe(MAX_US);
    let batches = 0;
    while (w.us > 2 * 300 + 1 && batches < 1000) {
      w.landed(300);
      ++batches;
    }
    expect(batches).toBeLessThan(80); // (7/8)^n of the gap: some 70 batches from the ceiling
    expect(w.us).toBeGreaterThanOrEqual(2 * 300);
  });

  it('zoneWaitFor: "auto" adapts, a number is fixed', () => {
    const auto = zoneWaitFor('auto');
    expect(auto).toBeInstanceOf(AdaptiveZoneWait);
    for (let i = 0; i < 100; ++i) auto.landed(1100);
    expect(auto.us).toBeGreaterThan(2100);
    const fixed = zoneWaitFor(250);
    expect(fixed).toBeInstanceOf(FixedZoneWait);
    fixed.landed(4000);
    expect(fixed.us).toBe(250);
    expect(zoneWaitFor(0).us).toBe(0);
  });

  it('one slow batch moves it by an eighth of the difference', () => {
    const w = new AdaptiveZoneWait();
    for (let i = 0; i < 200; ++i) w.landed(500); // mean 500: wait 1000
    expect(w.us).toBe(1000);
    w.landed(4500);
    expect(w.us).toBe(1000 + 2 * (4500 - 500) / 8);
  });
});

describe('--zone-wait-us', () => {
  const zoneWait = (args: string[]): number | 'auto' => {
    const c = parseKvCommand(['--mode', 'pd3', '--segment', 'x', ...args], {});
    if (c.kind !== 'run') throw new Error(`not a run: ${c.kind}`);
    return c.options.zoneWaitUs;
  };

  it('is auto unless set, and takes a number of µs or auto, on the command line and in a config file', () => {
    expect(zoneWait([])).toBe('auto');
    expect(zoneWait(['--zone-wait-us', '250'])).toBe(250);
    expect(zoneWait(['--zone-wait-us', 'auto'])).toBe('auto');
    const dir = mkdtempSync(join(tmpdir(), 'pd3-kv-zone-wait-'));
    try {
      for (const [value, expected] of [[300, 300], ['auto', 'auto']] as const) {
        const file = join(dir, 'kv.json');
        writeFileSync(file, JSON.stringify({ zoneWaitUs: value }));
        expect(zoneWait(['--config', file])).toBe(expected);
      }
      writeFileSync(join(dir, 'bad.json'), JSON.stringify({ zoneWaitUs: 'later' }));
      expect(() => zoneWait(['--config', join(dir, 'bad.json')])).toThrow(/key "zoneWaitUs": must be auto or a whole number from 0 to 1000000, got a string \("later"\)/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

