// start.ts — `npm start`: the demo of what PD3 runs today, and a plain list of what is not built yet.
import { Worker } from 'node:worker_threads';
import { Pd3Host } from '../host/index.js';

const KEYS = 50_000;
const name = `pd3-demo-${process.pid}`;
const line = (s = ''): void => console.log(s);

line('PD3 demo — host library + the agent side of the shared segment');
line('');
const host = Pd3Host.create({ name, loadingZoneItems: 1 << 16, loadingZoneBytes: 16 << 20 });
const agent = new Worker(new URL('./demo-agent.js', import.meta.url), { workerData: { name, keys: KEYS } });
const stop = (): void => {
  agent.postMessage('stop');
  host.close();
};
process.once('SIGINT', () => {
  stop();
  process.exit(130);
});

try {
  line(`segment /dev/shm/${name} created; agent worker attached: ${await waitAlive()}`);

  // 1. Remote memory API through the request and response rings.
  const { region, capacity } = await host.allocate(1 << 20);
  const N = 20_000;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i += 100) {
    const batch: Array<Promise<unknown>> = [];
    for (let j = i; j < i + 100; ++j) {
      const v = Buffer.alloc(32, j & 0xff);
      batch.push(host.write(region, (j * 32) % capacity, v));
    }
    await Promise.all(batch);
  }
  const t1 = process.hrtime.bigint();
  let ok = 0;
  for (let i = 0; i < 1000; ++i) if ((await host.read(region, i * 32, 32))[0] === (i & 0xff)) ok++;
  const t2 = process.hrtime.bigint();
  line(`rings: ${N} writes of 32 B in ${(Number(t1 - t0) / 1e6).toFixed(1)} ms (100 in flight); ` +
       `1000 sequential reads, ${ok} correct, ${(Number(t2 - t1) / 1000 / 1000).toFixed(1)} µs each`);

  // 2. The Loading Zone: the agent produces, the host takes with checkAndReturn.
  agent.postMessage('prefetch');
  await new Promise((r) => agent.once('message', r));
  const dest = Buffer.alloc(64);
  let hits = 0;
  const t3 = process.hrtime.bigint();
  for (let k = 0; k < KEYS; ++k) if (host.checkAndReturn(Buffer.from(`user:${k}`), dest) === 64 && dest.readUInt32LE(0) === k) hits++;
  const t4 = process.hrtime.bigint();
  line(`loading zone: ${hits}/${KEYS} prefetched items taken with checkAndReturn, ` +
       `${(Number(t4 - t3) / KEYS).toFixed(0)} ns per call (incl. key encoding)`);
  const s = host.stats();
  line(`counters: requests ${s.host_requests}, responses ${s.host_responses}, agent batches ${s.agent_batches} ` +
       `(${(s.agent_requests / Math.max(1, s.agent_batches)).toFixed(1)} requests per batch), items produced ${s.lz_produced}`);
  line('');
  line('Not built yet, so not in this demo (see README.md, "Status"):');
  line('  - pd3-memserver: the memory server and TCP transport (above, the agent worker answers from a local buffer)');
  line('  - pd3-agent: the Transfer Engine process, Host View, packet mirror, parsers and prefetcher');
  line('  - example data systems (pd3-kv, hash map, page server) and the end-to-end comparison');
} finally {
  stop();
}

async function waitAlive(): Promise<boolean> {
  for (let i = 0; i < 200 && !host.agentAlive(); ++i) await new Promise((r) => setTimeout(r, 10));
  return host.agentAlive();
}
