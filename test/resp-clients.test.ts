// resp-clients.test.ts — the RESP parser on what real clients send: ioredis (single commands, a
// 100-command pipeline, 50-key MGET/MSET, MULTI/EXEC, lower- and upper-case names) and
// redis-benchmark (-P 16), through a recording proxy in front of a real redis-server. Each
// connection's recorded stream is parsed in random chunks, as reassembly would deliver it.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../dist/examples/harness/processes.js';
import { resp, type AccessOp } from '../dist/parsers/index.js';
import { optionalProgram } from './optional-program.js';

const REDIS_SERVER = optionalProgram({ name: 'redis-server', debianPackage: 'redis-server', needs: 'the RESP parser on real Redis clients' });
const REDIS_BENCHMARK = optionalProgram({ name: 'redis-benchmark', debianPackage: 'redis-tools', needs: 'the RESP parser on redis-benchmark' });

/** A key and op as the test expects them. */
type Expected = [key: string, op: AccessOp];


/** Forwards both ways to the server and records each connection's client→server bytes. */
class RecordingProxy {
  readonly streams: Buffer[][] = [];
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();

  constructor(private readonly target: number) {
    this.server = net.createServer((client) => {
      const chunks: Buffer[] = [];
      this.streams.push(chunks);
      const upstream = net.connect(this.target, '127.0.0.1');
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => s.destroy());
      }
      client.on('data', (d: Buffer) => {
        chunks.push(Buffer.from(d));
        upstream.write(d);
      });
      upstream.pipe(client);
      client.on('end', () => upstream.end());
      upstream.on('close', () => client.destroy());
    });
  }

  async listen(): Promise<number> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return (this.server.address() as net.AddressInfo).port;
  }

  /** Streams recorded since `from` (an index into `streams`). */
  since(from: number): Buffer[] {
    return this.streams.slice(from).map((chunks) => Buffer.concat(chunks));
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    this.server.close();
  }
}

/** A small seeded generator (xorshift32), so chunk sizes are random but repeatable. */
function prng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 0x100000000;
  };
}

/** Parses one connection's stream delivered in random chunks (1 byte to 4 KiB): what the agent
 *  would see. Every chunk boundary must leave a clean state at the end. */
function parseInChunks(stream: Buffer, next: () => number): Expected[] {
  const flow = resp.openFlow();
  const out: Expected[] = [];
  let pending: Buffer = Buffer.alloc(0);
  for (let at = 0; at < stream.length; ) {
    const n = 1 + Math.floor(next() * (next() < 0.5 ? 16 : 4096));
    pending = Buffer.concat([pending, stream.subarray(at, at + n)]);
    at += n;
    const r = flow.parseRequest(pending);
    expect(r).not.toBeNull();
    for (const a of r!.accesses) out.push([Buffer.from(a.key).toString('latin1'), a.op]);
    pending = pending.subarray(r!.consumed);
  }
  expect(pending.length).toBe(0); // every request complete
  return out;
}

let server: ChildProcess;
let proxy: RecordingProxy;
let proxyPort: number;

beforeAll(async () => {
  if (REDIS_SERVER === null) return; // every test below skips
  const port = await freePort();
  server = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server did not start: ${log}`)), 10_000);
    server.stdout!.on('data', (d: Buffer) => {
      log += d.toString();
      if (log.includes('Ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    });
    server.on('exit', (code) => reject(new Error(`redis-server exited (${code}): ${log}`)));
  });
  proxy = new RecordingProxy(port);
  proxyPort = await proxy.listen();
});

afterAll(async () => {
  await proxy?.close();
  server?.kill('SIGTERM');
  if (server && server.exitCode === null) await once(server, 'exit');
});

/** Runs `drive` with a fresh ioredis client on the proxy; returns that connection's parsed accesses. */
async function withIoredis(drive: (r: Redis) => Promise<void>, seed: number): Promise<Expected[]> {
  const from = proxy.streams.length;
  const client = new Redis({ host: '127.0.0.1', port: proxyPort, lazyConnect: true, maxRetriesPerRequest: 0 });
  await client.connect();
  await drive(client);
  await client.quit();
  const streams = proxy.since(from);
  expect(streams).toHaveLength(1);
  return parseInChunks(streams[0]!, prng(seed));
}

describe.skipIf(REDIS_SERVER === null)('ioredis through a recording proxy', () => {
  it('single commands: every key with its op, in order', async () => {
    const want: Expected[] = [];
    const got = await withIoredis(async (r) => {
      expect(await r.set('user:1', 'alice')).toBe('OK');
      want.push(['user:1', 'WRITE']);
      expect(await r.get('user:1')).toBe('alice');
      want.push(['user:1', 'READ']);
      expect(await r.set('user:2', 'bob', 'EX', 100, 'GET')).toBeNull();
      want.push(['user:2', 'READ']);
      expect(await r.incr('hits')).toBe(1);
      expect(await r.incrby('hits', 5)).toBe(6);
      expect(await r.append('user:1', '!')).toBe(6);
      want.push(['hits', 'READ'], ['hits', 'READ'], ['user:1', 'READ']);
      expect(await r.exists('user:1', 'nope')).toBe(1);
      want.push(['user:1', 'READ'], ['nope', 'READ']);
      expect(await r.expire('user:1', 100)).toBe(1);
      expect(await r.ttl('user:1')).toBeGreaterThan(0);
      want.push(['user:1', 'READ'], ['user:1', 'READ']);
      expect(await r.hset('h', 'f1', 'v1', 'f2', 'v2')).toBe(2);
      expect(await r.hget('h', 'f1')).toBe('v1');
      expect(await r.hgetall('h')).toEqual({ f1: 'v1', f2: 'v2' });
      want.push(['h', 'READ'], ['h', 'READ'], ['h', 'READ']);
      expect(await r.getset('user:1', 'carol')).toBe('alice!');
      expect(await r.getdel('user:1')).toBe('carol');
      want.push(['user:1', 'READ'], ['user:1', 'DELETE']);
      expect(await r.del('user:2', 'hits', 'h')).toBe(3);
      want.push(['user:2', 'DELETE'], ['hits', 'DELETE'], ['h', 'DELETE']);
      expect(await r.ping()).toBe('PONG');
      expect(await r.lpush('list', 'a')).toBe(1); // no key the parser knows
      const bin = Buffer.from([0, 13, 10, 42, 36, 255]);
      expect(await r.set(bin, 'x')).toBe('OK');
      expect(await r.getBuffer(bin)).toEqual(Buffer.from('x'));
      want.push([bin.toString('latin1'), 'WRITE'], [bin.toString('latin1'), 'READ']);
    }, 1);
    expect(got).toEqual(want);
  });

  it('a pipeline of 100 mixed commands', async () => {
    const want: Expected[] = [];
    const next = prng(2);
    const got = await withIoredis(async (r) => {
      const p = r.pipeline();
      for (let i = 0; i < 100; ++i) {
        const k = `pipe:${Math.floor(next() * 20)}`;
        switch (i % 6) {
          case 0: p.set(k, String(i)); want.push([k, 'WRITE']); break;
          case 1: p.get(k); want.push([k, 'READ']); break;
          case 2: p.incr(`${k}:n`); want.push([`${k}:n`, 'READ']); break;
          case 3: p.del(k, `${k}:n`); want.push([k, 'DELETE'], [`${k}:n`, 'DELETE']); break;
          case 4: p.mget(k, `${k}:x`); want.push([k, 'READ'], [`${k}:x`, 'READ']); break;
          default: p.ping(); break;
        }
      }
      const results = await p.exec();
      expect(results).toHaveLength(100);
      expect(results!.every(([err]) => err === null)).toBe(true);
    }, 2);
    expect(got).toEqual(want);
  });

  it('MSET and MGET with 50 keys', async () => {
    const keys = Array.from({ length: 50 }, (_, i) => `multi:${i}`);
    const got = await withIoredis(async (r) => {
      expect(await r.mset(...keys.flatMap((k, i) => [k, `v${i}`]))).toBe('OK');
      expect(await r.mget(...keys)).toEqual(keys.map((_, i) => `v${i}`));
    }, 3);
    expect(got).toEqual([...keys.map((k): Expected => [k, 'WRITE']), ...keys.map((k): Expected => [k, 'READ'])]);
  });

  it('a MULTI/EXEC transaction: the queued commands give their keys, MULTI and EXEC none', async () => {
    const got = await withIoredis(async (r) => {
      const results = await r.multi().set('tx:a', '1').incr('tx:a').get('tx:a').del('tx:a').exec();
      expect(results!.map(([, v]) => v)).toEqual(['OK', 2, '2', 1]);
    }, 4);
    expect(got).toEqual([
      ['tx:a', 'WRITE'],
      ['tx:a', 'READ'],
      ['tx:a', 'READ'],
      ['tx:a', 'DELETE'],
    ]);
  });

  it('command names in lower, upper and mixed case', async () => {
    const got = await withIoredis(async (r) => {
      expect(await r.call('set', 'case:k', 'v')).toBe('OK');
      expect(await r.call('GET', 'case:k')).toBe('v');
      expect(await r.call('gEt', 'case:k')).toBe('v');
      expect(await r.call('DeL', 'case:k')).toBe(1);
    }, 5);
    expect(got).toEqual([
      ['case:k', 'WRITE'],
      ['case:k', 'READ'],
      ['case:k', 'READ'],
      ['case:k', 'DELETE'],
    ]);
  });
});

describe.skipIf(REDIS_SERVER === null || REDIS_BENCHMARK === null)('redis-benchmark through the recording proxy', () => {
  it('-P 16 -t get,set,mset,incr,lpush: exact counts, ops and keys', async () => {
    const from = proxy.streams.length;
    // Asynchronously: the proxy runs on this process's event loop.
    const bench = spawn(
      REDIS_BENCHMARK!,
      ['-h', '127.0.0.1', '-p', String(proxyPort), '-n', '2000', '-P', '16', '-c', '8', '-r', '100000', '-t', 'get,set,mset,incr,lpush', '-q'],
      { stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 },
    );
    const run = { stdout: '', stderr: '', status: null as number | null };
    bench.stdout.on('data', (d: Buffer) => (run.stdout += d.toString()));
    bench.stderr.on('data', (d: Buffer) => (run.stderr += d.toString()));
    [run.status] = (await once(bench, 'close')) as [number | null];
    expect(run.status, run.stderr).toBe(0);
    for (const t of ['GET', 'SET', 'MSET', 'INCR', 'LPUSH']) expect(run.stdout).toMatch(new RegExp(`^${t}.*requests per second`, 'm'));
    const next = prng(6);
    const counts = new Map<string, number>();
    let total = 0;
    for (const stream of proxy.since(from)) {
      for (const [key, op] of parseInChunks(stream, next)) {
        // -r replaces __rand_int__ with 12 digits: key:000000012345, counter:000000012345.
        const shape = key.replace(/^(key|counter):\d{12}$/, '$1:N');
        counts.set(`${op} ${shape}`, (counts.get(`${op} ${shape}`) ?? 0) + 1);
        total++;
      }
    }
    expect(Object.fromEntries(counts)).toEqual({
      'READ key:N': 2000, // GET
      'WRITE key:N': 2000 + 2000 * 10, // SET, and MSET's 10 keys per request
      'READ counter:N': 2000, // INCR (read-modify-write); LPUSH gives none
    });
    expect(total).toBe(26000);
  });
});
