// integration-failures.test.ts — real pd3-agent and pd3-memserver processes failing under a
// Pd3Host: wrong auth tokens, a memory server killed and restarted on its data directory (nothing
// acknowledged is lost, its key index comes back), and an agent killed mid-run with the 'fail'
// fallback (fenced requests never execute) and the 'direct' fallback.
import { closeSync, openSync, readFileSync, readSync, readdirSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { constants as C, type ControlField } from '../dist/host/index.js';
import {
  Rand,
  Rig,
  codeOf,
  logEvents,
  metric,
  outcome,
  randomModelRun,
  readAll,
  sleep,
  waitUntil,
  within,
  type Outcome,
} from './integration-helpers.js';

const TOKEN = 'integration-failures-token';
/** Direct mode's back-off after a failed connection (docs/host-library.md, "Direct mode"). */
const DIRECT_RETRY_MS = 100;

/** A u64 of the segment's control block, read from its file (/dev/shm/<name>). */
function controlField(segment: string, field: ControlField): bigint {
  const fd = openSync(`/dev/shm/${segment}`, 'r');
  try {
    const b = Buffer.alloc(8);
    expect(readSync(fd, b, 0, 8, C.control[field])).toBe(8);
    return b.readBigUInt64LE(0);
  } finally {
    closeSync(fd);
  }
}

let rig = new Rig();
afterEach(async () => {
  const done = rig;
  rig = new Rig();
  await done.teardown();
});

/** True once every thread of process `pid` is in the stopped state (a SIGSTOP takes effect per
 *  thread, some time after kill() returns). */
function allThreadsStopped(pid: number): boolean {
  const tasks = readdirSync(`/proc/${pid}/task`);
  return tasks.every((t) => {
    const stat = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('T');
  });
}

/** Key/value records in the pd3/record.h format, followed by the end marker. */
function kvRecords(entries: Array<[string, Buffer]>): Buffer {
  const parts: Buffer[] = [];
  for (const [key, value] of entries) {
    const header = Buffer.alloc(C.SIZEOF_KV_HEADER);
    const k = Buffer.from(key);
    header.writeUInt32LE(k.length, C.KV_KEY_LEN);
    header.writeUInt32LE(value.length, C.KV_VALUE_LEN);
    parts.push(header, k, value);
  }
  parts.push(Buffer.alloc(C.SIZEOF_KV_HEADER)); // key_len 0 ends the sequence
  return Buffer.concat(parts);
}

/** The 16 unique bytes written to slot `slot` by the kill test. */
function slotValue(slot: number): Buffer {
  const v = Buffer.alloc(16);
  v.writeUInt32LE(slot, 0);
  v.writeUInt32LE((slot ^ 0xa5a5a5a5) >>> 0, 4);
  v.writeUInt32LE(Math.imul(slot + 1, 2654435761) >>> 0, 8);
  v.writeUInt32LE(0xfeedbeef, 12);
  return v;
}

describe('wrong auth token', () => {
  it('an agent with the wrong token fails requests UNAVAILABLE promptly and logs server.auth', async () => {
    const server = await rig.memserverWithMetrics({ token: TOKEN });
    const host = rig.host('authagent');
    const agent = await rig.agent(host.name, [server.port], 'not-the-token');
    expect(agent.ready.serversUp).toBe(0);
    for (const attempt of [() => host.allocate(4096), () => host.read(1, 0, 8), () => host.write(1, 0, Buffer.alloc(8))]) {
      const started = Date.now();
      expect(await within(codeOf(attempt()), 3000, 'request through an agent refused by its server')).toBe('PD3_E_UNAVAILABLE');
      expect(Date.now() - started).toBeLessThan(1000);
    }
    await waitUntil(() => logEvents(agent, 'server.auth').length > 0, 3000, 'agent log event server.auth');
    expect(logEvents(agent, 'server.auth')[0]!.level).toBe('error');
    expect(await metric(server.metrics, 'pd3_memserver_auth_failures_total')).toBeGreaterThan(0);
    expect(host.agentAlive()).toBe(true); // the agent itself is up; only its server refused it
  });

  it('direct mode with the wrong token rejects with PD3_E_AUTH; the right token works', async () => {
    const server = await rig.memserver({ token: TOKEN });
    const servers = [`127.0.0.1:${server.port}`];
    const wrong = rig.host('authdirect', { directOnly: true, directServers: servers, directToken: 'not-the-token' });
    // A refused connection is retried after a 100 ms back-off (docs/host-library.md, "Direct
    // mode"); each attempt here comes after it, so each one meets the server's refusal.
    const attempts: Array<[string, () => Promise<unknown>]> = [
      ['allocate', () => wrong.allocate(4096)],
      ['read', () => wrong.read(1, 0, 8)],
      ['write', () => wrong.write(1, 0, Buffer.alloc(8))],
    ];
    for (const [what, attempt] of attempts) {
      expect(await within(codeOf(attempt()), 3000, `direct ${what} with a wrong token`), what).toBe('PD3_E_AUTH');
      await sleep(DIRECT_RETRY_MS + 50);
    }

    const right = rig.host('authok', { directOnly: true, directServers: servers, directToken: TOKEN });
    const { region } = await within(right.allocate(4096), 3000, 'direct allocate');
    await right.write(region, 100, Buffer.from('direct'));
    expect((await right.read(region, 100, 6)).toString()).toBe('direct');
    // Both buffers went through the handle's registration cache (docs/mrrc.md): the write's
    // source and the read's destination, each registered (or found registered), none refused.
    const st = right.stats();
    expect(st.host_mr_hits + st.host_mr_misses).toBe(2);
    expect(st.host_mr_registrations).toBeGreaterThanOrEqual(1);
    expect(st.host_mr_failures).toBe(0);
    // The refused client cannot reach a region that exists either.
    expect(await within(codeOf(wrong.read(region, 100, 6)), 3000, 'direct read with a wrong token')).toBe('PD3_E_AUTH');
  });
});

describe('memory server killed mid-run', () => {
  it('fails requests promptly, and after a restart on its data dir keeps every acknowledged write and its index', async () => {
    const dataDir = rig.tempDir('memkill');
    const first = await rig.memserverWithMetrics({ token: TOKEN, serverId: 3, dataDir });
    const port = first.port;
    const host = rig.host('memkill');
    await rig.agent(host.name, [port], TOKEN);

    // Key/value records: the server indexes them as they are written.
    const SLOTS = 1 << 14;
    const data = await host.allocate(SLOTS * 16);
    const kv = await host.allocate(65536);
    expect(data.region >>> C.REGION_LOCAL_BITS).toBe(3);
    const KEYS = 200;
    const rand = new Rand(11);
    const records = kvRecords(Array.from({ length: KEYS }, (_, i) => [`user:${i}`, rand.bytes(1 + rand.int(100))]));
    await host.write(kv.region, 0, records);
    expect(await metric(first.metrics, 'pd3_memserver_index_keys')).toBe(KEYS);

    // Unique values to known slots, 32 in flight; each write's outcome is recorded.
    const results = new Map<number, Outcome<number>>();
    const issuedAt = new Map<number, number>();
    const outstanding = new Set<Promise<void>>();
    const pendingSlots = new Set<number>();
    let next = 0;
    const issue = (): void => {
      const slot = next++;
      issuedAt.set(slot, Date.now());
      pendingSlots.add(slot);
      const p: Promise<void> = outcome(host.write(data.region, slot * 16, slotValue(slot))).then((o) => {
        results.set(slot, o);
        pendingSlots.delete(slot);
        outstanding.delete(p);
      });
      outstanding.add(p);
    };
    const acked = (): number => [...results.values()].filter((o) => o.ok).length;
    const pump = async (until: () => boolean, ms: number): Promise<void> => {
      const deadline = Date.now() + ms;
      while (!until() && Date.now() < deadline) {
        while (outstanding.size < 32 && next < SLOTS) issue();
        await Promise.race([...outstanding, sleep(50)]);
      }
    };
    await pump(() => acked() >= 600, 10_000);
    expect(acked()).toBeGreaterThanOrEqual(600);
    expect([...results.values()].every((o) => o.ok)).toBe(true);

    // Kill with writes in flight: each of them settles within the bound, and so does every write
    // issued after the process is gone.
    while (outstanding.size < 32) issue();
    const atKill = [...outstanding];
    const slotsAtKill = [...pendingSlots];
    const killedAt = Date.now();
    await first.kill();
    await within(Promise.all(atKill), 5000, 'requests outstanding at the kill');
    const firstAfterKill = next;
    await pump(() => next - firstAfterKill >= 100, 2000);
    expect(next - firstAfterKill).toBeGreaterThanOrEqual(100);
    await within(Promise.all([...outstanding]), 5000, 'requests issued after the kill');
    expect(slotsAtKill.length).toBe(32);
    for (const slot of slotsAtKill) {
      expect(results.get(slot)!.at - killedAt, `slot ${slot} in flight at the kill`).toBeLessThan(5000);
    }
    const failures = [...results.entries()].filter(([, o]) => !o.ok);
    expect(failures.length).toBeGreaterThan(0);
    for (const [, o] of failures) expect(['PD3_E_UNAVAILABLE', 'PD3_E_TIMEOUT']).toContain(!o.ok && o.code);
    // Everything issued after the process was gone failed, each within the bound.
    for (let slot = firstAfterKill; slot < next; ++slot) {
      const o = results.get(slot)!;
      expect(o.ok, `slot ${slot} written while the server was down`).toBe(false);
      expect(o.at - issuedAt.get(slot)!).toBeLessThan(5000);
    }

    // Same port, same data dir, same id: the agent reconnects and the old region ids work.
    const second = await rig.memserverWithMetrics({ token: TOKEN, serverId: 3, dataDir, port });
    expect(second.port).toBe(port);
    await waitUntil(async () => (await outcome(host.read(data.region, 0, 16))).ok, 5000, 'a read after the restart', 50);

    const stored = await readAll(host, data.region, data.capacity);
    let ackedSlots = 0;
    for (const [slot, o] of results) {
      const got = stored.subarray(slot * 16, slot * 16 + 16);
      if (o.ok) {
        ackedSlots++;
        expect(got.equals(slotValue(slot)), `acknowledged slot ${slot}`).toBe(true);
      } else {
        // Unacknowledged: it may or may not have landed, but never partly.
        expect(got.equals(slotValue(slot)) || got.equals(Buffer.alloc(16)), `failed slot ${slot}`).toBe(true);
      }
    }
    expect(ackedSlots).toBeGreaterThanOrEqual(600);
    expect(stored.subarray(next * 16).equals(Buffer.alloc(stored.length - next * 16))).toBe(true);
    expect((await host.read(kv.region, 0, records.length)).equals(records)).toBe(true);
    expect(await metric(second.metrics, 'pd3_memserver_index_keys')).toBe(KEYS);
    // And the restarted server takes new writes.
    await host.write(data.region, 0, Buffer.alloc(16, 0x42));
    expect((await host.read(data.region, 0, 16)).equals(Buffer.alloc(16, 0x42))).toBe(true);
  });
});

describe('agent killed mid-run', () => {
  it("fallback 'fail': in-flight requests fail AGENT_DOWN, new ones at once; fenced writes never execute", async () => {
    const AGENT_TIMEOUT = 200;
    const server = await rig.memserver({ token: TOKEN });
    const host = rig.host('agentfail', { agentTimeoutMs: AGENT_TIMEOUT });
    const first = await rig.agent(host.name, [server.port], TOKEN);
    const region = await host.allocate(65536);
    const scratch = await host.allocate(1 << 20);
    const before = new Rand(21).bytes(32768);
    await host.write(region.region, 0, before);

    // Requests in flight inside the agent when it dies: the memory server is paused (SIGSTOP), so
    // the agent has taken and forwarded them but has no answer to publish. This stages the kill
    // outside the agent's publish of an answer: a kill between reserving a response slot and
    // sealing it leaves a hole that blocks the response ring for the next agent (reported).
    server.child.kill('SIGSTOP');
    rig.defer(() => server.child.kill('SIGCONT'));
    await waitUntil(() => allThreadsStopped(server.child.pid!), 3000, 'memory server stopped');
    const taken = host.stats().agent_requests;
    const stream: Array<Promise<Outcome<unknown>>> = [];
    for (let i = 0; i < 64; ++i) {
      const request: Promise<unknown> = i % 2
        ? host.read(scratch.region, i * 4096, 4096)
        : host.write(scratch.region, i * 4096, Buffer.alloc(4096, i));
      stream.push(outcome(request));
    }
    await waitUntil(() => host.stats().agent_requests >= taken + 64, 3000, 'the agent took the stream');
    const killedAt = Date.now();
    await first.kill();

    // The heartbeat is still fresh for up to AGENT_TIMEOUT ms: these writes enter the ring, and no
    // agent will ever take them before the host declares it down and fences them.
    expect(host.agentAlive(), 'agent still counted alive right after the kill (staging the fence)').toBe(true);
    const inflightBefore = host.inflight;
    const fenced: Array<Promise<Outcome<unknown>>> = [];
    for (let i = 0; i < 16; ++i) fenced.push(outcome(host.write(region.region, i * 1024, Buffer.alloc(1024, 0xee))));
    expect(host.inflight).toBe(inflightBefore + 16);

    const settled = await within(Promise.all([...stream, ...fenced]), AGENT_TIMEOUT + 3000, 'requests in flight at the kill');
    for (const o of settled) {
      expect(o.ok ? 'resolved' : o.code).toBe('PD3_E_AGENT_DOWN');
      expect(o.at - killedAt).toBeLessThan(AGENT_TIMEOUT + 2000);
    }
    server.child.kill('SIGCONT');
    expect(host.agentAlive()).toBe(false);
    expect(host.inflight).toBe(0);

    // New requests fail at once: nothing enters the ring, the promise is already rejected.
    const issued = Date.now();
    const now = [host.read(region.region, 0, 8), host.write(region.region, 0, Buffer.alloc(8)), host.allocate(4096)];
    expect(host.inflight).toBe(0);
    for (const p of now) expect(await codeOf(p)).toBe('PD3_E_AGENT_DOWN');
    expect(Date.now() - issued).toBeLessThan(100);

    // A new agent on the same segment: it discards the fenced writes and serves new requests.
    await rig.agent(host.name, [server.port], TOKEN);
    await waitUntil(() => host.agentAlive(), 3000, 'agent alive again');
    expect((await within(host.read(region.region, 0, 32768), 3000, 'read through the new agent')).equals(before)).toBe(true);
    // The new agent discarded the fenced requests unseen, and counted them in the control block.
    expect(controlField(host.name, 'req_fence')).toBeGreaterThan(0n);
    expect(controlField(host.name, 'agent_fenced')).toBeGreaterThanOrEqual(16n);
    const fresh = await host.allocate(65536);
    const run = await randomModelRun(host, [{ region: fresh.region, model: Buffer.alloc(fresh.capacity) }], 500, new Rand(22), 16);
    expect(run.mismatches).toEqual([]);
    // Still the pre-kill bytes after the new agent has been serving for a while.
    expect((await host.read(region.region, 0, 32768)).equals(before)).toBe(true);
  });

  it("fallback 'direct': requests go to the memory server while the agent is down, and back through a new agent", async () => {
    const server = await rig.memserver({ token: TOKEN });
    const host = rig.host('agentdirect', {
      agentTimeoutMs: 200,
      fallback: 'direct',
      directServers: [`127.0.0.1:${server.port}`],
      directToken: TOKEN,
    });
    const first = await rig.agent(host.name, [server.port], TOKEN);
    const region = await host.allocate(65536);
    const viaAgent = new Rand(31).bytes(16384);
    await host.write(region.region, 0, viaAgent);

    await first.kill();
    await waitUntil(() => !host.agentAlive(), 3000, 'agent counted down');
    // No agent exists: these can only succeed directly against the memory server.
    expect((await within(host.read(region.region, 0, 16384), 3000, 'direct read')).equals(viaAgent)).toBe(true);
    const viaDirect = new Rand(32).bytes(16384);
    expect(await within(host.write(region.region, 16384, viaDirect), 3000, 'direct write')).toBe(16384);
    expect((await host.read(region.region, 16384, 16384)).equals(viaDirect)).toBe(true);
    const other = await within(host.allocate(32768), 3000, 'direct allocate');
    const model = { region: other.region, model: Buffer.alloc(other.capacity) };
    const direct = await within(randomModelRun(host, [model], 400, new Rand(33), 16), 10_000, 'direct random run');
    expect(direct.mismatches).toEqual([]);
    expect(host.agentAlive()).toBe(false);

    // A new agent: the same data through it.
    const second = await rig.agentWithMetrics(host.name, [server.port], TOKEN);
    await waitUntil(() => host.agentAlive(), 3000, 'agent alive again');
    const recordsBefore = await metric(second.metrics, 'pd3_agent_records_total');
    expect((await host.read(region.region, 0, 32768)).equals(Buffer.concat([viaAgent, viaDirect]))).toBe(true);
    expect((await readAll(host, other.region, other.capacity)).equals(model.model)).toBe(true);
    expect(await metric(second.metrics, 'pd3_agent_records_total')).toBeGreaterThan(recordsBefore);
  });
});
