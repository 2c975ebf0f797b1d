// loadgen.test.ts — the native load generator (build/pd3-loadgen, bench/loadgen) as a process:
// refused command lines (exit 2 naming the flag), --verify against a real pd3-kv (local mode) and
// the real hash map (binary protocol), a fake RESP server that returns one wrong value, error
// replies, replies written one byte at a time, a reset and a silent server, connection refused,
// the open-loop rate, and the TS wrapper (examples/harness/loadgen.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Logger } from '../dist/cli/logger.js';
import { LoadgenError, loadgenArgs, parseLoadgenOutput, runLoadgen } from '../dist/examples/harness/loadgen.js';
import { startKv, type KvServer } from '../dist/examples/pd3-kv/index.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const LOADGEN = join(root, 'build', 'pd3-loadgen');
const HASHMAP = join(root, 'build', 'pd3_hashmap');
const quiet = new Logger('pd3-kv', 'error');

/** Runs pd3-loadgen to completion (asynchronously: in-process servers keep serving). */
function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(LOADGEN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function json(stdout: string): Record<string, unknown> {
  const line = stdout.split('\n').find((l) => l.startsWith('{'));
  if (line === undefined) throw new Error(`no JSON line in ${JSON.stringify(stdout)}`);
  return JSON.parse(line) as Record<string, unknown>;
}

async function listening(server: Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as { port: number }).port;
}

async function closed(server: Server): Promise<void> {
  await new Promise<void>((r) => server.close(() => r()));
}

/** How a fake RESP server misbehaves. */
interface FakeSpec {
  /** GET / MGET of this key answers a value of the right length whose first byte is changed. */
  wrongKey?: string;
  /** GETs answer -ERR. */
  errorOnGet?: boolean;
  /** GETs answer an array holding the value, SETs an integer (well-framed, but wrong replies). */
  wrongShapes?: boolean;
  /** Every reply byte goes out in its own write, one event-loop turn apart. */
  bytewise?: boolean;
  /** Destroy the connection after this many commands. */
  resetAfter?: number;
  /** Never answer. */
  silent?: boolean;
}

/** A minimal RESP server (arrays of bulk strings: SET, GET, MGET) with planted faults. */
class FakeResp {
  readonly server: Server;
  readonly store = new Map<string, Buffer>();
  readonly sockets = new Set<Socket>();
  commands = 0;

  constructor(private readonly spec: FakeSpec) {
    this.server = createServer((s) => this.serve(s));
  }

  private serve(socket: Socket): void {
    this.sockets.add(socket);
    socket.setNoDelay(true);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => undefined);
    let pending = Buffer.alloc(0);
    const queue: number[] = [];
    let pumping = false;
    const pump = (): void => {
      const b = queue.shift();
      if (b === undefined || socket.destroyed) {
        pumping = false;
        return;
      }
      socket.write(Buffer.of(b));
      setImmediate(pump);
    };
    const send = (reply: Buffer): void => {
      if (!this.spec.bytewise) {
        socket.write(reply);
        return;
      }
      for (const b of reply) queue.push(b);
      if (!pumping) {
        pumping = true;
        setImmediate(pump);
      }
    };
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        const parsed = parseCommand(pending);
        if (parsed === null) return;
        pending = pending.subarray(parsed.used);
        ++this.commands;
        if (this.spec.resetAfter !== undefined && this.commands > this.spec.resetAfter) {
          socket.resetAndDestroy();
          return;
        }
        if (!this.spec.silent) send(this.answer(parsed.args));
      }
    });
  }

  private value(key: string): Buffer {
    const v = this.store.get(key);
    if (v === undefined) return Buffer.from('$-1\r\n');
    let out = v;
    if (key === this.spec.wrongKey) {
      out = Buffer.from(v);
      out[0] = out[0] === 0x41 ? 0x42 : 0x41;
    }
    return Buffer.concat([Buffer.from(`$${out.length}\r\n`), out, Buffer.from('\r\n')]);
  }

  private answer(args: Buffer[]): Buffer {
    const cmd = args[0]!.toString().toUpperCase();
    if (cmd === 'SET') {
      this.store.set(args[1]!.toString(), Buffer.from(args[2]!));
      return Buffer.from(this.spec.wrongShapes ? ':1\r\n' : '+OK\r\n');
    }
    if (cmd === 'GET') {
      if (this.spec.errorOnGet) return Buffer.from('-ERR planted failure\r\n');
      if (this.spec.wrongShapes) return Buffer.concat([Buffer.from('*1\r\n'), this.value(args[1]!.toString())]);
      return this.value(args[1]!.toString());
    }
    if (cmd === 'MGET') {
      return Buffer.concat([Buffer.from(`*${args.length - 1}\r\n`), ...args.slice(1).map((k) => this.value(k.toString()))]);
    }
    return Buffer.from(`-ERR unknown command '${cmd}'\r\n`);
  }

  async start(): Promise<number> {
    return listening(this.server);
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await closed(this.server);
  }
}

/** One request (array of bulk strings) from the front of `b`, or null if incomplete. */
function parseCommand(b: Buffer): { args: Buffer[]; used: number } | null {
  const line = (from: number): [string, number] | null => {
    const end = b.indexOf('\r\n', from);
    return end < 0 ? null : [b.toString('latin1', from, end), end + 2];
  };
  const head = line(0);
  if (head === null) return null;
  if (!head[0].startsWith('*')) throw new Error(`fake server: not an array: ${head[0]}`);
  const n = Number(head[0].slice(1));
  let at = head[1];
  const args: Buffer[] = [];
  for (let i = 0; i < n; ++i) {
    const len = line(at);
    if (len === null) return null;
    const size = Number(len[0].slice(1));
    if (b.length < len[1] + size + 2) return null;
    args.push(b.subarray(len[1], len[1] + size));
    at = len[1] + size + 2;
  }
  return { args, used: at };
}

describe('pd3-loadgen command line', () => {
  it('is built next to pd3_native_tests', () => {
    expect(existsSync(LOADGEN)).toBe(true);
  });

  const refused: Array<[string[], RegExp]> = [
    [['--port', '1', '--pipeline', 'x'], /^pd3-loadgen: --pipeline: must be an integer in 1\.\.4096, got 'x'$/m],
    [['--port', '1', '--pipeline', '0'], /^pd3-loadgen: --pipeline: must be an integer in 1\.\.4096, got '0'$/m],
    [['--port', '1', '--connections', '5000'], /^pd3-loadgen: --connections: must be an integer in 1\.\.1024/m],
    [['--port', '70000'], /^pd3-loadgen: --port: must be an integer in 1\.\.65535, got '70000'$/m],
    [['--records', '10'], /^pd3-loadgen: --port: required/m],
    [['--port', '1', '--workload', 'G'], /^pd3-loadgen: --workload: must be one of A, B, C, D, E, F, got 'G'$/m],
    [['--port', '1', '--distribution', 'hot'], /^pd3-loadgen: --distribution: must be uniform, zipfian or latest/m],
    [['--port', '1', '--protocol', 'http'], /^pd3-loadgen: --protocol: must be resp or binary, got 'http'$/m],
    [['--port', '1', '--rate', '-5'], /^pd3-loadgen: --rate: must be a number above 0/m],
    [['--port', '1', '--duration', '0'], /^pd3-loadgen: --duration: must be a number above 0/m],
    [['--port', '1', '--warmup', 'soon'], /^pd3-loadgen: --warmup: must be a number at least 0/m],
    [['--port', '1', '--protocol', 'binary', '--value-size', '100'], /^pd3-loadgen: --value-size: the binary protocol's values are 8 bytes/m],
    [['--port', '1', '--operations', '5', '--duration', '1'], /^pd3-loadgen: --operations and --duration: give one, not both$/m],
    [['--port', '1', '--verify'], /^pd3-loadgen: --verify: needs --load with the resp protocol/m],
    [['--port', '1', '--bogus', '3'], /^pd3-loadgen: unknown flag '--bogus' \(see --help\)$/m],
    [['--port'], /^pd3-loadgen: --port: needs a value$/m],
    [['--port', '1', '--port', '2'], /^pd3-loadgen: --port: given twice$/m],
    [['--port', '1', '--load=yes'], /^pd3-loadgen: --load: takes no value/m],
    [['--port', '1', '--cpu', '-1'], /^pd3-loadgen: --cpu: must be an integer in 0\.\.1023, got '-1'$/m],
  ];
  it.each(refused)('refuses %j with exit 2 and a line naming the flag', async (args, message) => {
    const r = await run(args);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('--help lists every flag and exits 0', async () => {
    const r = await run(['--help']);
    expect(r.code).toBe(0);
    for (const flag of ['--protocol', '--host', '--port', '--workload', '--distribution', '--records', '--value-size',
      '--seed', '--scan-max', '--load', '--operations', '--duration', '--warmup', '--connections', '--pipeline',
      '--rate', '--verify', '--max-errors', '--reply-timeout', '--cpu', '--help']) {
      expect(r.stdout).toContain(flag);
    }
  });

  it('connection refused: a clear error, exit 1', async () => {
    const s = createServer();
    const port = await listening(s);
    await closed(s);  // nobody listens there now
    const r = await run(['--port', String(port), '--operations', '10']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^pd3-loadgen: connect to 127\\.0\\.0\\.1:${port}: Connection refused$`, 'm'));
  });
});

describe('pd3-loadgen against pd3-kv (local mode)', () => {
  let kv: KvServer;
  beforeAll(async () => {
    kv = await startKv({ listen: '127.0.0.1:0', mode: 'local', logLevel: 'error' }, { logger: quiet });
  });
  afterAll(async () => {
    await kv.close();
  });

  for (const distribution of ['zipfian', 'latest', 'uniform'] as const) {
    it(`--verify passes: workload A, ${distribution}, 4 connections x 16 pipeline`, async () => {
      const progress: string[] = [];
      const r = await runLoadgen({ port: kv.port, workload: 'A', distribution, records: 2000, load: true, verify: true,
        operations: 20000, connections: 4, pipeline: 16, seed: 3, onStderr: (l) => progress.push(l) });
      expect(r.ops).toBe(20000);
      expect(r.loaded).toBe(2000);
      expect(r.wrongValues).toBe(0);
      expect(r.errors).toBe(0);
      expect(r.verifiedReads).toBeGreaterThan(8000);
      expect(r.workload).toBe('A');
      expect(r.distribution).toBe(distribution);
      expect(r.protocol).toBe('resp');
      expect(r.p50Us).toBeGreaterThan(0);
      expect(r.p999Us).toBeGreaterThanOrEqual(r.p99Us);
      expect(r.maxUs).toBeGreaterThanOrEqual(r.p999Us * 0.96);
      expect(r.cpuUserS + r.cpuSysS).toBeGreaterThan(0);
      expect(r.cpuUsPerOp).toBeGreaterThan(0);
      expect(progress.some((l) => /wrong value for key|error reply to/.test(l))).toBe(false);
      expect(progress.join('\n')).toMatch(/20000 ops in/);
    });
  }

  it('--verify passes with inserts, scans and read-modify-writes (D, E, F)', async () => {
    for (const workload of ['D', 'E', 'F'] as const) {
      // Inserted keys are new to this server: each workload gets its own key range above the others'.
      const r = await runLoadgen({ port: kv.port, workload, records: 2000, load: true, verify: true, operations: 5000,
        connections: 3, pipeline: 8, seed: 11 });
      expect(r.wrongValues, workload).toBe(0);
      expect(r.errors, workload).toBe(0);
      if (workload === 'F') expect(r.requests).toBeGreaterThan(r.ops);  // an RMW is a GET and a SET
      if (workload === 'E') expect(r.verifiedReads).toBeGreaterThan(r.ops * 2);  // MGET of several keys
      await kv.close();  // a fresh server: D's inserted keys would look stale to E
      kv = await startKv({ listen: '127.0.0.1:0', mode: 'local', logLevel: 'error' }, { logger: quiet });
    }
  });

  it('open loop: --rate gives about the requested rate, timed from the schedule', async () => {
    const r = await runLoadgen({ port: kv.port, workload: 'C', records: 1000, load: true, rate: 2000, durationS: 1.5,
      connections: 2, pipeline: 8 });
    expect(r.rate).toBe(2000);
    const achieved = r.ops / r.seconds;
    expect(achieved).toBeGreaterThan(2000 * 0.7);
    expect(achieved).toBeLessThan(2000 * 1.3);
    expect(r.ops).toBeGreaterThan(3000 * 0.7);
    expect(r.ops).toBeLessThan(3000 * 1.3);
    expect(r.errors).toBe(0);
  });

  it('the wrapper rejects with the stderr text on a non-zero exit', async () => {
    const e = await runLoadgen({ port: kv.port, pipeline: 0 }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(LoadgenError);
    expect((e as LoadgenError).exitCode).toBe(2);
    expect((e as LoadgenError).message).toContain('--pipeline: must be an integer in 1..4096');
    expect(loadgenArgs({ port: 5, load: true, durationS: 0.5, valueSize: 8, protocol: 'binary' })).toEqual(
      ['--port', '5', '--protocol', 'binary', '--value-size', '8', '--duration', '0.5', '--load']);
    expect(parseLoadgenOutput('noise\n{"ops":3,"p50_us":1.5,"cpu_us_per_op":0.7}\n')).toEqual({ ops: 3, p50Us: 1.5, cpuUsPerOp: 0.7 });
  });
});

describe('pd3-loadgen against fake RESP servers', () => {
  const fakes: FakeResp[] = [];
  async function fake(spec: FakeSpec): Promise<[FakeResp, number]> {
    const f = new FakeResp(spec);
    fakes.push(f);
    return [f, await f.start()];
  }
  afterAll(async () => {
    for (const f of fakes) await f.close();
  });

  it('a wrong value for one key fails the run (exit 1), naming the key and what came back', async () => {
    const [, port] = await fake({ wrongKey: 'user000000000007' });
    const r = await run(['--port', String(port), '--records', '20', '--load', '--verify', '--workload', 'C',
      '--distribution', 'uniform', '--operations', '2000', '--value-size', '32']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^pd3-loadgen: wrong value for key user000000000007: GET returned '[^']+' \(32 bytes\); expected version 0 '/m);
    expect(r.stderr).not.toMatch(/wrong value for key user0000000000(0[0-689]|1\d)/);
    expect(r.stderr).toMatch(/run failed: \d+ reads returned a wrong value/);
    const j = json(r.stdout);
    expect(j.wrong_values).toBeGreaterThan(0);
    expect(j.ops).toBe(2000);
    // The wrapper rejects with that text and the result.
    const e = (await runLoadgen({ port, records: 20, load: true, verify: true, workload: 'C', distribution: 'uniform',
      operations: 500, valueSize: 32 }).catch((x: unknown) => x)) as LoadgenError;
    expect(e).toBeInstanceOf(LoadgenError);
    expect(e.exitCode).toBe(1);
    expect(e.message).toContain('wrong value for key user000000000007');
    expect(e.result?.wrongValues).toBeGreaterThan(0);
  });

  it('error replies are counted and reported: exit 1 past --max-errors, exit 0 within', async () => {
    const [, port] = await fake({ errorOnGet: true });
    const r = await run(['--port', String(port), '--records', '50', '--load', '--workload', 'B', '--operations', '1000']);
    expect(r.code).toBe(1);
    const j = json(r.stdout);
    expect(j.error_replies).toBeGreaterThan(800);  // 95% reads
    expect(j.errors).toBe(j.error_replies);
    expect(j.ops).toBe(1000);
    expect(r.stderr).toMatch(/^pd3-loadgen: error reply to GET user0000000000\d\d: 'ERR planted failure'$/m);
    expect(r.stderr).toMatch(/run failed: \d+ errors \(error replies \d+, unexpected replies 0; --max-errors 0\)/);
    const tolerated = await run(['--port', String(port), '--records', '50', '--workload', 'B', '--operations', '500',
      '--max-errors', '1000']);
    expect(tolerated.code).toBe(0);
    expect(json(tolerated.stdout).error_replies).toBeGreaterThan(400);
    expect(tolerated.stderr).toMatch(/errors \d+ \(error replies \d+/);
  });

  it('replies of the wrong shape (an array to GET, an integer to SET) are counted as unexpected', async () => {
    const [, port] = await fake({ wrongShapes: true });
    const r = await run(['--port', String(port), '--records', '50', '--workload', 'A', '--operations', '400']);
    expect(r.code).toBe(1);
    const j = json(r.stdout);
    expect(j.unexpected_replies).toBe(400);
    expect(j.errors).toBe(400);
    expect(j.error_replies).toBe(0);
    expect(r.stderr).toMatch(/^pd3-loadgen: unexpected reply to GET user0000000000\d\d: 'an array reply'$/m);
    expect(r.stderr).toMatch(/^pd3-loadgen: unexpected reply to SET user0000000000\d\d: 'an integer reply'$/m);
    expect(r.stderr).toMatch(/run failed: 400 errors \(error replies 0, unexpected replies 400; --max-errors 0\)/);
  });

  it('replies written one byte at a time are parsed and verified', async () => {
    const [f, port] = await fake({ bytewise: true });
    const r = await run(['--port', String(port), '--records', '30', '--load', '--verify', '--workload', 'E',
      '--operations', '150', '--value-size', '12', '--connections', '2', '--pipeline', '4', '--scan-max', '3']);
    expect(r.stderr).not.toMatch(/wrong value for key|error reply to|bad reply from/);
    expect(r.code).toBe(0);
    const j = json(r.stdout);
    expect(j.wrong_values).toBe(0);
    expect(j.verified_reads).toBeGreaterThan(150);  // scans read several keys each
    expect(f.commands).toBeGreaterThanOrEqual(180);  // 30 SETs of the load, then 150 ops
  });

  it('a connection reset mid-run fails the run with the reason (exit 1)', async () => {
    const [, port] = await fake({ resetAfter: 300 });
    const r = await run(['--port', String(port), '--records', '100', '--load', '--operations', '10000', '--connections', '1']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/run failed: connection 1 of 1 to 127\.0\.0\.1:\d+: ((send|recv): Connection reset by peer|closed by the server)/);
    const j = json(r.stdout);
    expect(j.connection_errors).toBe(1);
    expect(j.errors).toBeGreaterThanOrEqual(1);
  });

  it('--cpu pins the process; a CPU the OS refuses is reported and the run goes on unpinned', async () => {
    const [, port] = await fake({});
    const pinned = await run(['--port', String(port), '--records', '10', '--load', '--operations', '100', '--cpu', '0']);
    expect(pinned.code).toBe(0);
    expect(json(pinned.stdout).pinned_cpu).toBe(0);
    const refused = await run(['--port', String(port), '--records', '10', '--load', '--operations', '100', '--cpu', '1023']);
    expect(refused.code).toBe(0);
    expect(refused.stderr).toMatch(/^pd3-loadgen: --cpu 1023: the OS refused to pin this process \(.+\); running unpinned$/m);
    expect(json(refused.stdout).pinned_cpu).toBeNull();
    expect(json(refused.stdout).ops).toBe(100);
  });

  it('a server that never answers fails the run after --reply-timeout (exit 1)', async () => {
    const [, port] = await fake({ silent: true });
    const started = Date.now();
    const r = await run(['--port', String(port), '--operations', '10', '--reply-timeout', '0.5']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/no reply from 127\.0\.0\.1:\d+ for 0\.5\d* s with \d+ requests outstanding/);
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});

describe('pd3-loadgen against the hash map (binary protocol)', () => {
  let hashmap: ChildProcess;
  let port = 0;
  const RECORDS = 5000;
  beforeAll(async () => {
    hashmap = spawn(HASHMAP, ['--mode', 'local', '--listen', '127.0.0.1:0', '--records', String(RECORDS), '--threads', '2'],
      { stdio: ['pipe', 'pipe', 'pipe'] });
    port = await new Promise<number>((resolve, reject) => {
      let out = '';
      let err = '';
      const timer = setTimeout(() => reject(new Error(`pd3_hashmap not ready\n${err}`)), 15_000);
      hashmap.stderr!.setEncoding('utf8').on('data', (s: string) => (err += s));
      hashmap.stdout!.setEncoding('utf8').on('data', (s: string) => {
        out += s;
        const ready = out.split('\n').find((l) => l.includes('"event":"ready"'));
        if (ready !== undefined) {
          clearTimeout(timer);
          resolve(Number((JSON.parse(ready) as { port: number }).port));
        }
      });
      hashmap.on('exit', (code) => reject(new Error(`pd3_hashmap exited (${code})\n${err}`)));
    });
  });
  afterAll(async () => {
    if (hashmap.exitCode === null) {
      const gone = new Promise((r) => hashmap.once('exit', r));
      hashmap.kill('SIGTERM');
      await gone;
    }
  });

  it('--verify passes against the hash map\'s own load (no --load)', async () => {
    const r = await runLoadgen({ port, protocol: 'binary', workload: 'B', distribution: 'uniform', records: RECORDS,
      verify: true, operations: 20000 });
    expect(r.protocol).toBe('binary');
    expect(r.valueSize).toBe(8);
    expect(r.wrongValues).toBe(0);
    expect(r.errors).toBe(0);
    expect(r.notFound).toBe(0);
    expect(r.verifiedReads).toBeGreaterThan(18000);
  });

  it('--verify passes after --load with updates, inserts, scans and read-modify-writes', async () => {
    // Inserts add keys from --records on; E loads 1000 more records than D so that it overwrites the
    // keys D inserted (about 200) before inserting its own.
    for (const [workload, records] of [['A', RECORDS], ['D', RECORDS], ['F', RECORDS], ['E', RECORDS + 1000]] as const) {
      const r = await runLoadgen({ port, protocol: 'binary', workload, records, load: true, verify: true,
        operations: 4000, seed: 5, connections: 4, pipeline: 16 });
      expect(r.wrongValues, workload).toBe(0);
      expect(r.errors, workload).toBe(0);
      expect(r.loaded).toBe(records);
    }
  });

  it('the same run without --load, after writes changed the values, is caught', async () => {
    // The keys now hold YCSB values, not the hash map's load values: every read is a mismatch.
    const r = await run(['--protocol', 'binary', '--port', String(port), '--records', String(RECORDS), '--verify',
      '--workload', 'C', '--operations', '100']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^pd3-loadgen: wrong value for key \d+: GET returned '.*' \(8 bytes\); expected the hash map's load value/m);
  });
});
