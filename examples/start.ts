// start.ts — `npm start`: the demo of what PD3 runs today. It starts a real pd3-memserver and a
// real pd3-agent on loopback, drives remote memory through them from this host process, kills
// the agent to show the fallback, and stops everything it started (also on Ctrl-C).
import { randomBytes } from 'node:crypto';
import { startAgent, startMemserver, type Daemon } from '../bench/lib/processes.js';
import { Pd3Error, Pd3Host } from '../host/index.js';

const name = `pd3-demo-${process.pid}`;
const token = randomBytes(16).toString('hex');
const line = (s = ''): void => console.log(s);
const daemons: Daemon[] = [];
let host: Pd3Host | null = null;

async function stopAll(): Promise<void> {
  host?.close();
  host = null;
  await Promise.all(daemons.splice(0).map((d) => d.stop()));
}
process.once('SIGINT', () => {
  void stopAll().then(() => process.exit(130));
});

async function main(): Promise<void> {
  line('PD3 demo — host library → shared segment → pd3-agent → TCP → pd3-memserver');
  line('');
  const server = await startMemserver({ token, capacity: '256M' });
  daemons.push(server);
  line(`pd3-memserver listening on 127.0.0.1:${server.port} (server id 0, 256 MiB)`);
  host = Pd3Host.create({
    name,
    agentTimeoutMs: 300,
    fallback: 'direct', // when the agent is gone, go to the memory server directly
    directServers: [`127.0.0.1:${server.port}`],
    directToken: token,
  });
  const agent = await startAgent(name, [server.port], token);
  daemons.push(agent);
  line(`pd3-agent attached to /dev/shm/${name} (pid ${agent.child.pid})`);
  while (!host.agentAlive()) await new Promise((r) => setTimeout(r, 5));

  // 1. Remote memory through the agent: writes in flight 100 at a time, then sequential reads.
  const { region, capacity } = await retryUnavailable(() => host!.allocate(1 << 20));
  const N = 20_000;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i += 100) {
    const batch: Array<Promise<unknown>> = [];
    for (let j = i; j < i + 100; ++j) batch.push(host.write(region, (j * 32) % capacity, Buffer.alloc(32, j & 0xff)));
    await Promise.all(batch);
  }
  const t1 = process.hrtime.bigint();
  let ok = 0;
  for (let i = 0; i < 1000; ++i) if ((await host.read(region, i * 32, 32))[0] === (i & 0xff)) ok++;
  const t2 = process.hrtime.bigint();
  line(`through the agent: ${N} writes of 32 B in ${(Number(t1 - t0) / 1e6).toFixed(1)} ms (100 in flight); ` +
       `1000 sequential reads, ${ok} correct, ${(Number(t2 - t1) / 1e6).toFixed(1)} µs each`);
  const s = host.stats();
  line(`  agent batches ${s.agent_batches}, ${(s.agent_requests / Math.max(1, s.agent_batches)).toFixed(1)} requests per batch`);

  // 2. Errors reach the caller with a status.
  try {
    await host.read(region, capacity - 8, 64);
  } catch (e) {
    line(`a read past the region's end: ${(e as Pd3Error).code}`);
  }

  // 3. The agent dies: requests fall back to the memory server directly (configured above).
  await agent.kill();
  daemons.splice(daemons.indexOf(agent), 1);
  line(`pd3-agent killed (SIGKILL); waiting for its heartbeat to go stale...`);
  while (host.agentAlive()) await new Promise((r) => setTimeout(r, 20));
  const t3 = process.hrtime.bigint();
  let direct = 0;
  for (let i = 0; i < 1000; ++i) if ((await host.read(region, i * 32, 32))[0] === (i & 0xff)) direct++;
  const t4 = process.hrtime.bigint();
  line(`direct fallback: 1000 sequential reads, ${direct} correct, ${(Number(t4 - t3) / 1e6).toFixed(1)} µs each ` +
       `(the host now pays for the transport itself)`);
  line('');
  line('Measure the two paths side by side: npm run bench -- transfer (docs/benchmarks.md).');
  line('Not in this demo yet (README.md, "Status"): the packet mirror, parsers and prefetcher exist as tested');
  line('units but do not yet drive prefetching into the Loading Zone (issue 5); the example data systems and');
  line('the end-to-end comparison come with issue 6.');
}

// Allocation may race the agent's first connection to the server: retry briefly.
async function retryUnavailable<T>(f: () => Promise<T>): Promise<T> {
  for (let i = 0; ; ++i) {
    try {
      return await f();
    } catch (e) {
      if (!(e instanceof Pd3Error) || e.code !== 'PD3_E_UNAVAILABLE' || i > 100) throw e;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

try {
  await main();
} finally {
  await stopAll();
}
