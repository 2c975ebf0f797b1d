// client.ts — the allocating side of `npm run bench -- pool`: one process on the host CPUs with
// several host segments (each served by its own pd3-agent), allocating regions of mixed sizes
// through all of them, and pausing where the driver makes a server join or leave.
//
// Lines on stdout, one JSON object each: {"segments":[...]} once they exist; {"pause":"join"} and
// {"pause":"leave"} at those points of the run; finally {"result":{...}}. It goes on after each
// "go" line on stdin.
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { constants, Pd3Error, Pd3Host } from '../../host/index.js';

const { values } = parseArgs({
  options: {
    segments: { type: 'string', default: '3' },
    allocations: { type: 'string', default: '300' },
    seed: { type: 'string', default: '1' },
    'join-at': { type: 'string', default: '0.33' },
    'leave-at': { type: 'string', default: '0.67' },
    tag: { type: 'string', default: 'pool' },
  },
});
const SEGMENTS = Number(values.segments);
const ALLOCATIONS = Number(values.allocations);
const JOIN_AT = Math.floor(Number(values['join-at']) * ALLOCATIONS);
const LEAVE_AT = Math.floor(Number(values['leave-at']) * ALLOCATIONS);
const MIB = 2 ** 20;

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
async function awaitGo(): Promise<void> {
  const next = await lines.next();
  if (next.done || next.value.trim() !== 'go') throw new Error(`expected "go" from the driver, got ${JSON.stringify(next.value)}`);
}
const say = (o: object): boolean => process.stdout.write(`${JSON.stringify(o)}\n`);

// Region sizes as a pool of tenants asks for them: mostly small, a tenth of them 16 MiB.
let state = BigInt(values.seed) * 0x9e3779b97f4a7c15n + 1n;
function nextSize(): number {
  state = (state * 6364136223846793005n + 1442695040888963407n) & 0xffff_ffff_ffff_ffffn;
  const r = Number(state >> 40n) % 100;
  return r < 70 ? MIB : r < 90 ? 4 * MIB : 16 * MIB;
}

const hosts = Array.from({ length: SEGMENTS }, (_, i) =>
  Pd3Host.create({ name: `pd3-pool-${values.tag}-${process.pid}-${i}`, replace: true }));
say({ segments: hosts.map((h) => h.name) });
await awaitGo();

const bytesByServer = new Map<number, number>();
const latencies: number[] = [];
let unavailable = 0;
let refused = 0;

// One allocation; a server that left while it was asked is retried once (the agent places the
// retry among the servers still up).
async function allocateOne(host: Pd3Host, size: number): Promise<void> {
  for (let attempt = 0; attempt < 2; ++attempt) {
    const start = process.hrtime.bigint();
    try {
      const { region, capacity } = await host.allocate(size);
      latencies.push(Number(process.hrtime.bigint() - start) / 1000);
      const server = region >>> constants.REGION_LOCAL_BITS;
      bytesByServer.set(server, (bytesByServer.get(server) ?? 0) + capacity);
      return;
    } catch (e) {
      if (!(e instanceof Pd3Error)) throw e;
      if (e.code === 'PD3_E_NOSPACE') {
        refused++;
        return;
      }
      unavailable++;
    }
  }
}

// Answers are taken as soon as they arrive: the host library's own pump falls back to a 1 ms timer
// after 300 µs without one, which would measure the pump rather than the allocation.
let polling = true;
const pollAll = (): void => {
  for (const h of hosts) h.poll();
  if (polling) setImmediate(pollAll);
};
setImmediate(pollAll);

// Waves of one allocation per segment at once, as independent clients would ask.
for (let done = 0; done < ALLOCATIONS;) {
  if (done === JOIN_AT) {
    say({ pause: 'join' });
    await awaitGo();
  }
  if (done === LEAVE_AT) {
    say({ pause: 'leave' });
    await awaitGo();
  }
  // Up to the next pause or the end, whichever comes first.
  const nextStop = Math.min(...[JOIN_AT, LEAVE_AT, ALLOCATIONS].filter((p) => p > done));
  const wave = Math.min(SEGMENTS, nextStop - done);
  await Promise.all(hosts.slice(0, wave).map((h) => allocateOne(h, nextSize())));
  done += wave;
}

polling = false;
latencies.sort((a, b) => a - b);
const q = (f: number): number => latencies[Math.min(latencies.length - 1, Math.floor(f * latencies.length))] ?? 0;
say({
  result: {
    allocated: latencies.length,
    unavailable,
    refused,
    p50Us: q(0.5),
    p99Us: q(0.99),
    bytesByServer: Object.fromEntries(bytesByServer),
  },
});
for (const h of hosts) h.close();
process.exit(0);
