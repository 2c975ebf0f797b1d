// The etcd-outage phase of `npm run bench -- pool` turns its client's ticks (cumulative counters,
// and each tick's own allocations) into one window's figures; loadWindow is that arithmetic.
import { describe, expect, it } from 'vitest';
import { loadWindow, type Tick } from '../dist/bench/pool/outage.js';

const tick = (t: number, ops: number, extra: Partial<Tick> = {}): Tick => ({
  t, ops, failed: 0, wrong: 0, allocs: 0, allocFailed: 0, allocUs: [], allocServers: [], errors: [], ...extra,
});

describe('the outage phase: one window of the load', () => {
  it('counts from the last tick before the window to the last tick in it', () => {
    const ticks = [
      tick(1000, 100, { failed: 1, allocs: 1, allocUs: [900], allocServers: [1] }),
      tick(1100, 300, { failed: 1, allocs: 3, allocUs: [100, 300], allocServers: [1, 2] }),
      tick(1200, 500, { failed: 4, wrong: 1, allocs: 4, allocFailed: 2, allocUs: [200], allocServers: [2] }),
      tick(1300, 900, { failed: 4, wrong: 1, allocs: 4, allocFailed: 2 }),
    ];
    const w = loadWindow(ticks, 1050, 1200);
    expect(w.opsPerS).toBe(((500 - 100) * 1000) / 200); // base is the tick at 1000, the last is 1200
    expect(w).toMatchObject({ failed: 3, wrong: 1, allocs: 3, allocFailed: 2 });
    expect(w.allocServers).toEqual({ 1: 1, 2: 2 }); // the tick at 1000 is before the window
    expect(w.allocP50Us).toBe(200);
    expect(w.allocP99Us).toBe(300);
  });

  it('starts from the first tick when none came before the window, and has no latency without allocations', () => {
    const w = loadWindow([tick(1000, 10), tick(1100, 60)], 0, 2000);
    expect(w.opsPerS).toBe(((60 - 10) * 1000) / 100);
    expect(w).toMatchObject({ allocs: 0, allocP50Us: 0, allocP99Us: 0, allocServers: {} });
  });

  it('refuses a window without a tick in it rather than report a rate of nothing', () => {
    expect(() => loadWindow([tick(1000, 10)], 1000, 2000)).toThrow(/no load tick between 1000 and 2000/);
  });
});
