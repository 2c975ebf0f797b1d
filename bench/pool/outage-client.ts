// outage-client.ts — the data system of the etcd-outage phase of `npm run bench -- pool`
// (bench/pool/outage.ts): one process on the host CPUs with a host segment served by a pd3-agent
// that follows the pool in etcd. It keeps a steady load on the data path, which must not notice
// etcd going away: workers that each write a 64-byte entry of their own and read it back, over
// regions the driver keeps off the server it will kill; and a new 4 KiB region allocated every
// 20 ms, which goes through the agent's placement and so through its view of the membership.
//
// Lines on stdout, one JSON object each: {"segment"} once the segment exists; {"ready","regions"}
// once the load's regions are allocated (after {"avoid"} on stdin: the server id to keep the
// load off); then a tick every 100 ms, {"t","ops","failed","wrong","allocs","allocFailed",
// "allocUs","allocServers","errors"}: counts since the start (ops, failed, wrong, allocs,
// allocFailed), this tick's allocation latencies in µs and the servers they went to, and the first
// few error messages of the tick. It runs until it is killed or told {"stop":true}.
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { constants, Pd3Host } from '../../host/index.js';

const { values } = parseArgs({
  options: {
    workers: { type: 'string', default: '16' },
    regions: { type: 'string', default: '4' },
    tag: { type: 'string', default: 'outage' },
  },
});
const WORKERS = Number(values.workers);
const REGIONS = Number(values.regions);
const ENTRY = 64;
const SLOTS_PER_WORKER = 64;
const TICK_MS = 100;
const ALLOC_EVERY_MS = 20;
const ALLOC_BYTES = 4096;
const MAX_ERRORS_PER_TICK = 3;

const say = (o: object): boolean => process.stdout.write(`${JSON.stringify(o)}\n`);
const commands = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
async function command(): Promise<Record<string, unknown>> {
  const next = await commands.next();
  if (next.done) process.exit(0); // the driver went away
  return JSON.parse(next.value) as Record<string, unknown>;
}
const serverOf = (region: number): number => region >>> constants.REGION_LOCAL_BITS;

const host = Pd3Host.create({ name: `pd3-pool-${values.tag}-${process.pid}`, replace: true });
process.on('exit', () => host.close());
say({ segment: host.name });
const { avoid } = (await command()) as { avoid: number };

// The load's regions, none on the server the driver will kill: its data path would fail there
// whether etcd is up or not, and this phase measures what the outage does.
const regions: number[] = [];
while (regions.length < REGIONS) {
  const { region } = await host.allocate(SLOTS_PER_WORKER * WORKERS * ENTRY);
  if (serverOf(region) !== avoid) regions.push(region);
}
say({ ready: true, regions: regions.map(String) });

let ops = 0;
let failed = 0;
let wrong = 0;
let allocs = 0;
let allocFailed = 0;
let allocUs: number[] = [];
let allocServers: number[] = [];
let errors: string[] = [];
let running = true;
// The first few error messages of a tick, for the driver's log.
const noteError = (what: string, e: unknown): void => {
  if (errors.length < MAX_ERRORS_PER_TICK) errors.push(`${what}: ${(e as Error).message}`);
};
const failure = (what: string, e: unknown): void => {
  failed++;
  noteError(what, e);
};

// Worker w owns slots w*SLOTS_PER_WORKER .. +SLOTS_PER_WORKER-1 (the same offsets in every region),
// so no other worker writes what it reads back.
async function worker(w: number): Promise<void> {
  const entry = Buffer.alloc(ENTRY);
  for (let seq = 0; running; ++seq) {
    const slot = w * SLOTS_PER_WORKER + (seq % SLOTS_PER_WORKER);
    const region = regions[seq % regions.length]!;
    entry.writeUInt32LE(w, 0);
    entry.writeUInt32LE(seq, 4);
    try {
      await host.write(region, slot * ENTRY, entry);
      ops++;
    } catch (e) {
      failure(`write of region ${region}`, e);
      continue;
    }
    try {
      const back = await host.read(region, slot * ENTRY, ENTRY);
      ops++;
      if (!back.equals(entry)) wrong++;
    } catch (e) {
      failure(`read of region ${region}`, e);
    }
  }
}

async function allocator(): Promise<void> {
  while (running) {
    const start = process.hrtime.bigint();
    try {
      const { region } = await host.allocate(ALLOC_BYTES);
      allocs++;
      allocUs.push(Number(process.hrtime.bigint() - start) / 1000);
      allocServers.push(serverOf(region));
    } catch (e) {
      allocFailed++;
      noteError('allocate', e);
    }
    await new Promise((r) => setTimeout(r, ALLOC_EVERY_MS));
  }
}

// Answers are taken as soon as they arrive, as in bench/pool/client.ts: the host library's own
// pump falls back to a 1 ms timer when idle, which would make the load's rate the timer's.
const pollAll = (): void => {
  host.poll();
  if (running) setImmediate(pollAll);
};
setImmediate(pollAll);
const ticker = setInterval(() => {
  say({ t: Date.now(), ops, failed, wrong, allocs, allocFailed, allocUs, allocServers, errors });
  allocUs = [];
  allocServers = [];
  errors = [];
}, TICK_MS);
const load = Promise.all([...Array.from({ length: WORKERS }, (_, w) => worker(w)), allocator()]);
await command(); // {"stop":true}
running = false;
clearInterval(ticker);
await load;
process.exit(0);
