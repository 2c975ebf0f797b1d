// hashmap.test.ts — the C++ hash map example (examples/hashmap) end to end with real processes:
// pd3-memserver, pd3-agent (pd3 modes) and the pd3_hashmap / pd3_hashmap_client binaries from the
// cmake build dir. In every mode random GET/PUT/DEL are checked against the client's model (no
// stale reads, every key read back at the end); in mode pd3 most local misses are served by
// checkAndReturn; malformed requests close only their connection; bad flags exit 2.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, startMemserver, type Daemon } from '../dist/examples/harness/processes.js';

const root = fileURLToPath(new URL('..', import.meta.url));
/** Where cmake put the binaries (next to pd3_native_tests); PD3_HASHMAP_DIR overrides. */
const binDir = process.env.PD3_HASHMAP_DIR ?? join(root, 'build');
const SERVER = join(binDir, 'pd3_hashmap');
const CLIENT = join(binDir, 'pd3_hashmap_client');
const WAIT_MS = 15_000;
const RECORDS = 5000;

/** A parsed JSON line (logs on stderr; ready and stats on stdout). */
type Line = Record<string, unknown> & { event: string };

/** A running pd3_hashmap. */
class HashMapProc {
  readonly child: ChildProcess;
  readonly out: Line[] = [];
  readonly logs: Line[] = [];
  stderr = '';
  readonly exited: Promise<number | null>;
  private waiters: Array<() => void> = [];

  constructor(args: string[], env: NodeJS.ProcessEnv = {}) {
    this.child = spawn(SERVER, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
    this.collect(this.child.stdout!, this.out, false);
    this.collect(this.child.stderr!, this.logs, true);
  }

  private collect(stream: NodeJS.ReadableStream, into: Line[], isErr: boolean): void {
    let partial = '';
    stream.setEncoding('utf8');
    stream.on('data', (s: string) => {
      if (isErr) this.stderr += s;
      partial += s;
      const lines = partial.split('\n');
      partial = lines.pop()!;
      for (const line of lines) if (line.startsWith('{')) into.push(JSON.parse(line) as Line);
      for (const w of this.waiters) w();
    });
  }

  /** Resolves with the first line in `lines` (from index `from`) with this event. */
  waitFor(lines: Line[], event: string, from = 0): Promise<Line> {
    return new Promise((resolve, reject) => {
      const check = (): boolean => {
        const hit = lines.slice(from).find((l) => l.event === event);
        if (hit) resolve(hit);
        return hit !== undefined;
      };
      if (check()) return;
      const timer = setTimeout(() => reject(new Error(`no "${event}" line within ${WAIT_MS} ms\n${this.stderr}`)), WAIT_MS);
      const waiter = (): void => {
        if (check()) {
          clearTimeout(timer);
          this.waiters = this.waiters.filter((w) => w !== waiter);
        }
      };
      this.waiters.push(waiter);
      void this.exited.then((code) => reject(new Error(`pd3_hashmap exited (${code}) before "${event}"\n${this.stderr}`)));
    });
  }

  /** The counters, asked for on stdin. */
  async stats(): Promise<Line> {
    const from = this.out.length;
    this.child.stdin!.write('stats\n');
    return this.waitFor(this.out, 'stats', from);
  }

  /** SIGTERM; resolves with the exit code and the final stats line. */
  async stop(): Promise<{ code: number | null; stats: Line | undefined }> {
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    const code = await this.exited;
    clearTimeout(timer);
    return { code, stats: this.out.filter((l) => l.event === 'stats').pop() };
  }
}

/** Runs a binary to completion. */
function run(bin: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Runs the client; resolves with its exit code and JSON result line. */
async function client(port: number, args: string[]): Promise<{ code: number | null; result: Record<string, number>; stderr: string }> {
  const r = await run(CLIENT, ['--connect', `127.0.0.1:${port}`, '--records', String(RECORDS), ...args]);
  const line = r.stdout.split('\n').find((l) => l.startsWith('{'));
  if (!line) throw new Error(`client printed no result (exit ${r.code})\n${r.stderr}`);
  return { code: r.code, result: JSON.parse(line) as Record<string, number>, stderr: r.stderr };
}

const token = randomBytes(16).toString('hex');
let memserver: (Daemon & { port: number }) | null = null;
let segments = 0;

/** A hash map in `mode`, serving; for the pd3 modes with its agent (pd3: watching the client
 *  traffic through `mirror`; with the tee proxy, clients connect to the proxy). */
async function startHashMap(mode: string, extra: string[] = [], mirror: 'tee' | 'afpacket' = 'tee'):
Promise<{ hm: HashMapProc; port: number; agent?: Daemon }> {
  const args = ['--mode', mode, '--listen', '127.0.0.1:0', '--records', String(RECORDS), '--threads', '2', ...extra];
  const remote = mode !== 'local';
  const direct = mode === 'sync' || mode === 'async' || mode === 'leap';
  const segment = `pd3-vt-hashmap-${process.pid}-${segments++}`;
  if (direct) args.push('--memservers', `127.0.0.1:${memserver!.port}`);
  if (remote && !direct) args.push('--segment', segment);
  const hm = new HashMapProc(args, { PD3_TOKEN: token });
  // The segment exists and the port is bound once this line is out: the agent can start.
  const listening = await hm.waitFor(hm.logs, 'listening');
  let agent: Daemon | undefined;
  let port = Number(listening.port);
  if (mode === 'pd3' || mode === 'pd3-noprefetch') {
    const prefetch = mode === 'pd3' ? ['--prefetch-parser', 'binary', '--mirror', mirror, '--app', `127.0.0.1:${port}`] : [];
    if (mode === 'pd3' && mirror === 'tee') prefetch.push('--tee-listen', '127.0.0.1:0');
    agent = await startAgent(segment, [memserver!.port], token, prefetch);
    if (mode === 'pd3' && mirror === 'tee') port = Number(agent.ready.teePort);
  }
  await hm.waitFor(hm.out, 'ready');
  return { hm, port, agent };
}

/** The random GET/PUT/DEL run every mode must pass, with the final read-back of every key. */
async function verifyRandomMix(port: number): Promise<Record<string, number>> {
  const { code, result, stderr } = await client(port, ['--verify', '--mix', '50:30:20', '--requests', '1200',
    '--batch', '4', '--depth', '8', '--connections', '4', '--seed', '7']);
  expect(stderr).toBe('');
  expect(result.mismatches).toBe(0);
  expect(result.broken).toBe(0);
  expect(result.errors).toBe(0);
  expect(result.verified).toBeGreaterThan(4800 + RECORDS);
  expect(result.not_found).toBeGreaterThan(0); // deletes and never-loaded keys were read
  expect(code).toBe(0);
  return result;
}

const have = existsSync(SERVER) && existsSync(CLIENT);

describe.runIf(have)('hash map example: every mode against the model', () => {
  beforeAll(async () => {
    memserver = await startMemserver({ token, capacity: '256M' });
  });
  afterAll(async () => {
    await memserver?.stop(2000);
  });

  it('local: everything in local memory', async () => {
    const { hm, port } = await startHashMap('local');
    await verifyRandomMix(port);
    const { code, stats } = await hm.stop();
    expect(code).toBe(0);
    expect(stats!.misses).toBe(0);
    expect(stats!.writebacks).toBe(0);
  });

  it('sync: misses wait on direct reads; evictions are written back', async () => {
    const { hm, port } = await startHashMap('sync', ['--cache-records', '50']);
    await verifyRandomMix(port);
    const { code, stats } = await hm.stop();
    expect(code).toBe(0);
    expect(Number(stats!.remote_lookups)).toBeGreaterThan(1000);
    expect(Number(stats!.remote_lookups)).toBe(Number(stats!.misses));
    expect(Number(stats!.evictions)).toBeGreaterThan(1000);
    // Every eviction (clean or dirty) and every delete is one write-back.
    expect(Number(stats!.writebacks)).toBeGreaterThanOrEqual(Number(stats!.evictions));
    expect(stats!.write_errors).toBe(0);
    expect(stats!.zone_hits).toBe(0);
  });

  it('async: the misses of a batch are read together by the I/O thread', async () => {
    const { hm, port } = await startHashMap('async');
    await verifyRandomMix(port);
    const { code, stats } = await hm.stop();
    expect(code).toBe(0);
    expect(Number(stats!.batched_lookups)).toBeGreaterThan(Number(stats!.remote_lookups) / 2);
  });

  it('leap: prefetches follow a trend of miss slots into the cache', async () => {
    const { hm, port } = await startHashMap('leap');
    const ready = hm.out.find((l) => l.event === 'ready')!;
    // Keys in home-slot order: the miss slots rise, a trend Leap picks up.
    const trend = await client(port, ['--verify', '--mix', '100:0:0', '--distribution', 'slot-order', '--slots',
      String(ready.slots), '--requests', '2000', '--connections', '1', '--depth', '1', '--no-sweep']);
    expect(trend.result.mismatches).toBe(0);
    expect(trend.code).toBe(0);
    const after = await hm.stats();
    expect(Number(after.prefetches_issued)).toBeGreaterThan(0);
    expect(Number(after.prefetches_admitted)).toBeGreaterThan(0);
    await verifyRandomMix(port);
    expect((await hm.stop()).code).toBe(0);
  });

  it('pd3-noprefetch: reads go through the agent', async () => {
    const { hm, port, agent } = await startHashMap('pd3-noprefetch');
    await verifyRandomMix(port);
    const { code, stats } = await hm.stop();
    await agent!.stop(2000);
    expect(code).toBe(0);
    expect(stats!.zone_hits).toBe(0);
    expect(Number(stats!.remote_lookups)).toBeGreaterThan(1000);
  });

  for (const mirror of ['tee', 'afpacket'] as const) {
    it(`pd3 (${mirror} mirror): most local misses are served by checkAndReturn, and nothing is stale`, async () => {
      // The packet mirror's run also waits for zone items (--zone-wait-us), so that path runs too.
      const { hm, port, agent } = await startHashMap('pd3', mirror === 'afpacket' ? ['--zone-wait-us', '200'] : [], mirror);
      // A random read stream over the loaded keys (all flushed by the load): the agent sees each
      // request and prefetches what the host lacks while the request waits its turn.
      const reads = await client(port, ['--verify', '--mix', '100:0:0', '--key-range', String(RECORDS), '--requests',
        '600', '--batch', '8', '--depth', '4', '--connections', '2', '--no-sweep']);
      expect(reads.result.mismatches).toBe(0);
      expect(reads.code).toBe(0);
      const s = await hm.stats();
      console.log(`pd3 (${mirror}): ${s.zone_hits} of ${s.misses} local misses served from the Loading Zone`);
      expect(Number(s.misses)).toBeGreaterThan(1000);
      expect(Number(s.zone_hits) / Number(s.misses)).toBeGreaterThan(0.5);
      expect(Number(s.zone_waited_hits)).toBeLessThanOrEqual(Number(s.zone_hits)); // a subset of them
      // Writes and deletes, then every key read back: a zone item never overrides a newer value.
      await verifyRandomMix(port);
      const { code } = await hm.stop();
      await agent!.stop(2000);
      expect(code).toBe(0);
    });
  }
});

/** Opens a connection, sends `bytes`, and resolves with what came back once the server closed it. */
function sendAndAwaitClose(port: number, bytes: Buffer, halfClose = false): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const sock: Socket = connect(port, '127.0.0.1');
    const got: Buffer[] = [];
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error('the server did not close the connection'));
    }, 5000);
    sock.on('connect', () => (halfClose ? sock.end(bytes) : sock.write(bytes)));
    sock.on('data', (d) => got.push(d));
    sock.on('error', () => undefined); // a reset after the close is fine
    sock.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(got));
    });
  });
}

/** A binproto request: header then entries (key, and value for PUT). */
function request(op: number, entries: Array<{ key: Buffer; value?: Buffer }>, magic = 0xd3): Buffer {
  const body = Buffer.concat(entries.map(({ key, value }) => {
    const k = Buffer.alloc(2);
    k.writeUInt16LE(key.length);
    if (value === undefined) return Buffer.concat([k, key]);
    const v = Buffer.alloc(4);
    v.writeUInt32LE(value.length);
    return Buffer.concat([k, key, v, value]);
  }));
  const h = Buffer.alloc(8);
  h.writeUInt32LE(4 + body.length, 0);
  h.writeUInt8(magic, 4);
  h.writeUInt8(op, 5);
  h.writeUInt16LE(entries.length, 6);
  return Buffer.concat([h, body]);
}

const key = (n: number): Buffer => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(BigInt(n));
  return b;
};

describe.runIf(have)('hash map example: bad input', () => {
  let hm: HashMapProc;
  let port = 0;
  beforeAll(async () => {
    hm = new HashMapProc(['--mode', 'local', '--listen', '127.0.0.1:0', '--records', '100', '--threads', '2']);
    port = Number((await hm.waitFor(hm.out, 'ready')).port);
  });
  afterAll(async () => {
    expect((await hm.stop()).code).toBe(0);
  });

  /** A GET of key 1 answers one entry with status 0 and 8 bytes of value. */
  async function serverStillAnswers(): Promise<void> {
    const back = await new Promise<Buffer>((resolve, reject) => {
      const sock = connect(port, '127.0.0.1', () => sock.write(request(1, [{ key: key(1) }])));
      const got: Buffer[] = [];
      sock.on('data', (d) => {
        got.push(d);
        const all = Buffer.concat(got);
        if (all.length >= 4 && all.length >= 4 + all.readUInt32LE(0)) {
          sock.destroy();
          resolve(all);
        }
      });
      sock.on('error', reject);
    });
    expect(back.readUInt8(4)).toBe(0xd4);
    expect(back.readUInt16LE(6)).toBe(1);
    expect(back.readUInt8(8)).toBe(0);
    expect(back.readUInt32LE(9)).toBe(8);
  }

  const cases: Array<[string, () => Buffer, string, boolean?]> = [
    ['bad magic', () => request(1, [{ key: key(1) }], 0x42), 'bad magic'],
    ['unknown op', () => { const r = request(1, [{ key: key(1) }]); r.writeUInt8(9, 5); return r; }, 'unknown op'],
    ['count too large for the length', () => { const r = request(1, [{ key: key(1) }]); r.writeUInt16LE(500, 6); return r; }, 'does not fit'],
    ['length above PD3_BIN_MAX_REQUEST', () => { const r = request(1, [{ key: key(1) }]); r.writeUInt32LE((16 << 20) + 1, 0); return r; }, 'PD3_BIN_MAX_REQUEST'],
    ['an entry running past the request', () => { const r = request(1, [{ key: key(1) }]); r.writeUInt16LE(200, 8); return r; }, 'runs past'],
    ['an empty key', () => request(1, [{ key: Buffer.alloc(0) }, { key: key(5) }]), 'empty key'],
    ['bytes after the last entry', () => { const r = request(1, [{ key: key(1) }, { key: key(2) }]); r.writeUInt16LE(1, 6); return r; }, 'after the last entry'],
    ['truncated: the client closes mid-request', () => request(1, [{ key: key(1) }]).subarray(0, 11), 'truncated', true],
  ];

  for (const [name, make, reason, halfClose] of cases) {
    it(`${name}: closes that connection with a log line, keeps serving`, async () => {
      const before = hm.logs.length;
      // A good request first, in the same packet: it is answered before the close.
      const good = request(1, [{ key: key(2) }]);
      const back = await sendAndAwaitClose(port, Buffer.concat([good, make()]), halfClose);
      expect(back.length).toBe(4 + back.readUInt32LE(0)); // exactly the good request's answer
      expect(back.readUInt8(8)).toBe(0);
      await hm.waitFor(hm.logs, 'conn.protocol_error', before);
      const line = hm.logs.slice(before).find((l) => l.event === 'conn.protocol_error')!;
      expect(String(line.msg)).toContain(reason);
      await serverStillAnswers();
    });
  }

  it('keys and values of the wrong length get a per-entry status, not a close', async () => {
    const sock = connect(port, '127.0.0.1');
    const all = await new Promise<Buffer>((resolve, reject) => {
      sock.on('connect', () => sock.write(Buffer.concat([
        request(1, [{ key: Buffer.from('short') }, { key: key(3) }]),
        request(2, [{ key: key(4), value: Buffer.from('toolongvalue') }]),
      ])));
      const got: Buffer[] = [];
      sock.on('data', (d) => {
        got.push(d);
        const b = Buffer.concat(got);
        const first = 4 + b.readUInt32LE(0);
        if (b.length >= first + 4 && b.length >= first + 4 + b.readUInt32LE(first)) resolve(b);
      });
      sock.on('error', reject);
    });
    sock.destroy();
    expect(all.readUInt8(8)).toBe(2); // kBadKey
    expect(all.readUInt8(9)).toBe(0); // key 3 found
    const second = 4 + all.readUInt32LE(0);
    expect(all.readUInt8(second + 8)).toBe(3); // kBadValue
  });
});

describe.runIf(have)('hash map example: bad flags exit 2, failed starts exit 1', () => {
  it('pd3 mode without an agent gives up after --agent-wait-ms and removes its segment', async () => {
    const segment = `pd3-vt-hashmap-noagent-${process.pid}`;
    const r = await run(SERVER, ['--mode', 'pd3', '--segment', segment, '--listen', '127.0.0.1:0', '--records', '10',
      '--agent-wait-ms', '200']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('"event":"start.failed"');
    expect(r.stderr).toContain(`no agent attached to segment ${segment}`);
    expect(existsSync(`/dev/shm/${segment}`)).toBe(false);
  });

  const serverCases: Array<[string[], string, NodeJS.ProcessEnv?]> = [
    [['--mode', 'bogus'], '--mode: must be'],
    [[], '--mode is required'],
    [['--mode', 'local', '--records', 'abc'], '--records: must be a whole number'],
    [['--mode', 'local', '--frobnicate'], 'unknown flag --frobnicate'],
    [['--mode', 'local', '--listen', 'nowhere'], '--listen: expected HOST:PORT'],
    [['--mode', 'sync', '--records', '100', '--slots', '100'], '--slots: must exceed --records'],
    [['--mode', 'sync', '--cache-records', '5', '--cache-percent', '1'], 'not both'],
    [['--mode', 'local', '--cache-records', '5'], 'not used with --mode local'],
    [['--mode', 'sync', '--cache-percent', '0'], '--cache-percent: must be a number above 0'],
    [['--mode', 'sync'], '--memservers is required'],
    [['--mode', 'sync', '--memservers', '127.0.0.1:1'], 'PD3_TOKEN', { PD3_TOKEN: '' }],
    [['--mode', 'pd3'], '--segment is required'],
    [['--mode', 'pd3', '--segment', 'a/b'], '--segment: 1 to 200 characters'],
    [['--mode', 'pd3', '--segment', 'x', '--memservers', '127.0.0.1:1'], '--memservers: not used'],
    [['--mode', 'pd3-noprefetch', '--segment', 'x', '--zone-wait-us', '10'], '--zone-wait-us applies to --mode pd3 only'],
    [['--mode', 'pd3', '--segment', 'x', '--zone-wait-us', '1000001'], '--zone-wait-us: must be'],
  ];
  for (const [args, message, env] of serverCases) {
    it(`pd3_hashmap ${args.join(' ') || '(no flags)'}`, async () => {
      const r = await run(SERVER, args, env);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(message);
    });
  }

  const clientCases: Array<[string[], string]> = [
    [['--records', '10'], '--connect HOST:PORT is required'],
    [['--connect', '127.0.0.1:1', '--records', '10', '--workload', 'E'], 'no meaning for a hash map'],
    [['--connect', '127.0.0.1:1', '--records', '10', '--verify', '--mix', '1:2'], '--mix: expected'],
  ];
  for (const [args, message] of clientCases) {
    it(`pd3_hashmap_client ${args.join(' ')}`, async () => {
      const r = await run(CLIENT, args);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(message);
    });
  }
});

describe('hash map example: build', () => {
  it(`pd3_hashmap and pd3_hashmap_client are built in ${binDir}`, () => {
    expect(have).toBe(true);
  });
});
