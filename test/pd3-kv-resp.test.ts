// pd3-kv-resp.test.ts — pd3-kv in local mode: its RESP reader on split and malformed input, the
// commands through ioredis (options, errors, TTLs, transactions), raw inline and garbage input on
// a live server (an error reply or a closed connection, never a crash), the CLI (bad flags exit 2,
// ready line, SIGTERM) and redis-benchmark.
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Logger } from '../dist/cli/logger.js';
import { RespReader, startKv, type KvServer } from '../dist/examples/pd3-kv/index.js';
import { optionalProgram } from './optional-program.js';
import { Rand } from './workers/model-run.mjs';

const REDIS_BENCHMARK = optionalProgram({ name: 'redis-benchmark', debianPackage: 'redis-tools', needs: 'pd3-kv under redis-benchmark' });

const CLI = join(fileURLToPath(new URL('.', import.meta.url)), '..', 'dist', 'examples', 'pd3-kv', 'cli.js');
const LIMITS = { maxBulkBytes: 1 << 20, maxInlineBytes: 64 * 1024, maxArgs: 1 << 20, maxRequestBytes: 64 << 20 };
const quiet = new Logger('pd3-kv', 'error');

/** Sends `bytes` on a fresh connection; resolves with everything received until the server closes
 *  it or `ms` pass, and whether it was closed. */
async function raw(port: number, bytes: Buffer | string, ms = 500): Promise<{ text: string; closed: boolean }> {
  const sock = connect(port, '127.0.0.1');
  await once(sock, 'connect');
  let text = '';
  let closed = false;
  sock.on('data', (d: Buffer) => (text += d.toString('latin1')));
  sock.on('error', () => undefined);
  const ended = new Promise<void>((r) => sock.on('close', () => ((closed = true), r())));
  sock.write(bytes);
  await Promise.race([ended, new Promise((r) => setTimeout(r, ms))]);
  sock.destroy();
  return { text, closed };
}

describe('RespReader', () => {
  it('frames a pipeline of arrays and inline commands the same whichever way it is split', () => {
    const stream = Buffer.from(
      '*3\r\n$3\r\nSET\r\n$4\r\nk\r\nx\r\n$0\r\n\r\n' + // binary-safe key holding CRLF, empty value
        'PING\r\n' +
        '\r\n' + // empty inline line: skipped
        'set "a b" \'c\\\'d\' "\\x41\\n"\n' +
        '*0\r\n' + // empty array: skipped
        '*1\r\n$4\r\nPING\r\n',
    );
    const whole = new RespReader(LIMITS).feed(stream);
    expect(whole.error).toBeNull();
    const words = whole.commands.map((c) => c.map((w) => w.toString('latin1')));
    expect(words).toEqual([['SET', 'k\r\nx', ''], ['PING'], ['set', 'a b', "c'd", 'A\n'], ['PING']]);
    const rand = new Rand(7);
    for (let round = 0; round < 200; ++round) {
      const reader = new RespReader(LIMITS);
      const got: string[][] = [];
      for (let at = 0; at < stream.length; ) {
        const n = round === 0 ? 1 : 1 + rand.int(12);
        const r = reader.feed(stream.subarray(at, at + n));
        expect(r.error).toBeNull();
        got.push(...r.commands.map((c) => c.map((w) => w.toString('latin1'))));
        at += n;
      }
      expect(got).toEqual(words);
    }
  });

  it('reports framing errors after the good requests, and nothing once broken', () => {
    const cases: Array<[string, RegExp]> = [
      ['*abc\r\n', /invalid multibulk length/],
      ['*2\r\n$3\r\nGET\r\n:1\r\n', /expected '\$', got ':'/],
      ['*1\r\n$-5\r\n', /invalid bulk length/],
      ['*1\r\n$99999999999999\r\n', /invalid bulk length/],
      [`*1\r\n$${(1 << 20) + 1}\r\n`, /invalid bulk length/],
      ['*1\r\n$3\r\nGETxx', /not followed by CRLF/],
      ['*2000000\r\n', /invalid multibulk length/],
      ['*1\r\n$3x\r\n', /invalid bulk length/],
      ['*1\r$3\r\n', /mbulk count/],
      ['SET "a b\r\n', /unbalanced quotes/],
      ['GET "a"b\r\n', /unbalanced quotes/],
      ['x'.repeat(70 * 1024), /too big inline request/],
    ];
    for (const [input, message] of cases) {
      const reader = new RespReader(LIMITS);
      const r = reader.feed(Buffer.from(`PING\r\n${input}`, 'latin1'));
      expect(r.commands.map((c) => c[0]!.toString())).toEqual(['PING']);
      expect(r.error, JSON.stringify(input.slice(0, 40))).toMatch(message);
      expect(reader.feed(Buffer.from('PING\r\n')).commands).toEqual([]);
    }
  });

  it('never throws on random bytes', () => {
    const rand = new Rand(99);
    const alphabet = Buffer.from('*$\r\n0123456789-"\' \\xGETSETabc', 'latin1');
    for (let i = 0; i < 3000; ++i) {
      const reader = new RespReader({ ...LIMITS, maxBulkBytes: 64, maxInlineBytes: 64, maxRequestBytes: 4096 });
      for (let j = 0; j < 4; ++j) {
        const b = Buffer.alloc(1 + rand.int(40));
        for (let k = 0; k < b.length; ++k) b[k] = rand.int(4) === 0 ? rand.int(256) : alphabet[rand.int(alphabet.length)]!;
        reader.feed(b);
      }
    }
  });
});

describe('pd3-kv local mode', () => {
  let kv: KvServer;
  let redis: Redis;

  beforeAll(async () => {
    kv = await startKv({ listen: '127.0.0.1:0', mode: 'local', logLevel: 'error' }, { logger: quiet });
    redis = new Redis({ port: kv.port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
    await redis.connect(); // ioredis' ready check runs INFO
  });
  afterAll(async () => {
    redis.disconnect();
    await kv.close();
  });

  it('strings: SET options, GET family, ranges, lengths, MGET/MSET', async () => {
    expect(await redis.set('s', 'hello')).toBe('OK');
    expect(await redis.set('s', 'x', 'NX')).toBeNull();
    expect(await redis.set('nope', 'x', 'XX')).toBeNull();
    expect(await redis.set('s', 'world', 'XX', 'GET')).toBe('hello');
    expect(await redis.setnx('s', 'y')).toBe(0);
    expect(await redis.getset('s', 'v2')).toBe('world');
    expect(await redis.append('s', '-more')).toBe(7);
    expect(await redis.strlen('s')).toBe(7);
    expect(await redis.getrange('s', 1, -2)).toBe('2-mor');
    expect(await redis.getrange('s', -100, 100)).toBe('v2-more');
    expect(await redis.setrange('s', 10, 'Z')).toBe(11);
    expect(await redis.getBuffer('s')).toEqual(Buffer.from('v2-more\0\0\0Z'));
    expect(await redis.mset('a', '1', 'b', '2')).toBe('OK');
    expect(await redis.msetnx('b', '3', 'c', '4')).toBe(0);
    expect(await redis.mget('a', 'b', 'c')).toEqual(['1', '2', null]);
    expect(await redis.getdel('a')).toBe('1');
    expect(await redis.exists('a', 'b', 'b')).toBe(2);
    expect(await redis.call('type', 'b')).toBe('string');
    expect(await redis.del('b', 'b', 'zz')).toBe(1);
    expect(await redis.set(Buffer.from([0, 255, 13, 10]), Buffer.from([1, 2, 3]))).toBe('OK');
    expect(await redis.getBuffer(Buffer.from([0, 255, 13, 10]))).toEqual(Buffer.from([1, 2, 3]));
    await expect(redis.set('', 'x')).rejects.toThrow(/empty keys/);
    await expect(redis.call('set', 'k', 'v', 'NX', 'XX')).rejects.toThrow(/syntax error/);
    await expect(redis.set('k', 'v', 'EX', '0')).rejects.toThrow(/invalid expire time in 'set'/);
    await expect(redis.call('mset', 'a', '1', 'b')).rejects.toThrow(/wrong number of arguments for 'mset'/);
    await expect(redis.call('get')).rejects.toThrow(/wrong number of arguments for 'get'/);
    await expect(redis.call('hset', 'h', 'f', 'v')).rejects.toThrow(/unknown command 'hset'/);
    await expect(redis.set('big', Buffer.alloc(70_000))).rejects.toThrow(/exceeds maximum allowed size/);
  });

  it('counters: INCR family, overflow and type errors', async () => {
    expect(await redis.incr('n')).toBe(1);
    expect(await redis.incrby('n', 41)).toBe(42);
    expect(await redis.decr('n')).toBe(41);
    expect(await redis.decrby('n', -9)).toBe(50);
    expect(await redis.incrbyfloat('n', '0.5')).toBe('50.5');
    expect(await redis.incrbyfloat('f', '1e3')).toBe('1000');
    await redis.set('n', '9223372036854775807');
    await expect(redis.incr('n')).rejects.toThrow(/overflow/);
    await redis.set('n', ' 1');
    await expect(redis.incr('n')).rejects.toThrow(/not an integer/);
    await redis.set('n', '01');
    await expect(redis.incr('n')).rejects.toThrow(/not an integer/);
    await expect(redis.incrby('n', 'x' as unknown as number)).rejects.toThrow(/not an integer/);
    await expect(redis.incrbyfloat('f', 'inf')).rejects.toThrow(/increment would produce NaN or Infinity/);
  });

  it('expiry: EX/PX, TTL/PTTL, PERSIST, EXPIRE options, lazy and active expiry', async () => {
    await redis.set('t', 'v', 'PX', 150);
    const pttl = await redis.pttl('t');
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(150);
    expect(await redis.ttl('t')).toBe(0);
    await redis.set('keep', 'v', 'EX', 100);
    await redis.set('keep', 'w', 'KEEPTTL');
    expect(await redis.ttl('keep')).toBe(100);
    await redis.set('keep', 'x');
    expect(await redis.ttl('keep')).toBe(-1);
    expect(await redis.ttl('absent')).toBe(-2);
    expect(await redis.call('expire', 'keep', '50', 'NX')).toBe(1);
    expect(await redis.call('expire', 'keep', '40', 'GT')).toBe(0);
    expect(await redis.call('expire', 'keep', '60', 'GT')).toBe(1);
    expect(await redis.persist('keep')).toBe(1);
    expect(await redis.persist('keep')).toBe(0);
    expect(await redis.call('getex', 'keep', 'EX', '5')).toBe('x');
    expect(await redis.ttl('keep')).toBe(5);
    await redis.setex('soon', 1, 'v');
    await redis.psetex('sooner', 100, 'v');
    await expect(redis.setex('bad', 0, 'v')).rejects.toThrow(/invalid expire time in 'setex'/);
    expect(await redis.incr('keep2')).toBe(1);
    await new Promise((r) => setTimeout(r, 300));
    expect(await redis.get('t')).toBeNull(); // lazy
    expect(await redis.exists('sooner')).toBe(0);
    expect(await redis.pexpire('keep2', -1)).toBe(1); // a time in the past deletes
    expect(await redis.get('keep2')).toBeNull();
    const expired = kv.stats.expiredKeys;
    await redis.set('active', 'v', 'PX', 50);
    await new Promise((r) => setTimeout(r, 400)); // no access: the sampler deletes it
    expect(kv.stats.expiredKeys).toBe(expired + 1);
    expect(await redis.exists('active')).toBe(0);
  });

  it('MULTI/EXEC, DISCARD, EXECABORT, and pipelines with ioredis', async () => {
    const tx = await redis.multi().set('m1', 'a').incr('m2').get('m1').mget('m1', 'm2').exec();
    expect(tx).toEqual([[null, 'OK'], [null, 1], [null, 'a'], [null, ['a', '1']]]);
    const p = redis.pipeline();
    for (let i = 0; i < 100; ++i) p.set(`p${i}`, `v${i}`).get(`p${i}`);
    const replies = await p.exec();
    expect(replies!.filter((_, i) => i % 2 === 1).map(([, v]) => v)).toEqual(Array.from({ length: 100 }, (_, i) => `v${i}`));
    expect(await raw(kv.port, 'MULTI\r\nSET x 1\r\nDISCARD\r\nEXISTS x\r\nMULTI\r\nNOSUCH\r\nSET x 1\r\nEXEC\r\nEXISTS x\r\nEXEC\r\n', 200)).toEqual({
      text: "+OK\r\n+QUEUED\r\n+OK\r\n:0\r\n+OK\r\n-ERR unknown command 'NOSUCH', with args beginning with: \r\n+QUEUED\r\n" +
        '-EXECABORT Transaction discarded because of previous errors.\r\n:0\r\n-ERR EXEC without MULTI\r\n',
      closed: false,
    });
    expect((await raw(kv.port, 'MULTI\r\nMULTI\r\nEXEC\r\n', 200)).text).toBe('+OK\r\n-ERR MULTI calls can not be nested\r\n*0\r\n');
  });

  it('server commands: PING, ECHO, SELECT, DBSIZE, INFO, CONFIG GET, COMMAND, CLIENT, HELLO, FLUSHALL', async () => {
    expect(await redis.ping()).toBe('PONG');
    expect(await redis.echo('hi')).toBe('hi');
    expect(await redis.select(0)).toBe('OK');
    await expect(redis.select(1)).rejects.toThrow(/out of range/);
    expect(await redis.config('GET', 'save')).toEqual(['save', '']);
    expect(await redis.config('GET', 'app*')).toEqual(['appendonly', 'no']);
    expect(await redis.call('command', 'count')).toBeGreaterThan(40);
    const info = (await redis.call('command', 'info', 'get', 'nope')) as unknown[];
    expect(info[0]).toEqual(['get', 2, ['readonly', 'fast'], 1, 1, 1]);
    expect(info[1]).toBeNull();
    expect(await redis.client('SETNAME', 'me')).toBe('OK');
    expect(await redis.client('GETNAME')).toBe('me');
    await expect(redis.call('hello', '3')).rejects.toThrow(/NOPROTO/);
    const text = await redis.info();
    for (const s of ['# Server', '# Clients', '# Stats', '# Keyspace', '# PD3kv', 'loading:0', 'mode:local', 'index_keys:']) expect(text).toContain(s);
    expect(await redis.info('stats')).not.toContain('# Server');
    expect(await redis.dbsize()).toBeGreaterThan(0);
    expect(await redis.flushall()).toBe('OK');
    expect(await redis.dbsize()).toBe(0);
    expect(await redis.get('s')).toBeNull();
    await redis.set('after', 'flush');
    expect(await redis.get('after')).toBe('flush');
  });

  it('inline commands and QUIT over a raw connection', async () => {
    expect(await raw(kv.port, 'SET inl "two words"\r\nGET inl\r\nPING\nQUIT\r\nPING\r\n')).toEqual({
      text: '+OK\r\n$9\r\ntwo words\r\n+PONG\r\n+OK\r\n',
      closed: true,
    });
  });

  it('malformed input gets an error reply and a closed connection; the server keeps serving', async () => {
    const bad = ['*abc\r\n', '*1\r\n$-7\r\n', '*1\r\n$99999999999\r\n', `*1\r\n$${1 << 30}\r\n`, '*2\r\n$3\r\nGET\r\n+x\r\n', 'GET "x\r\n'];
    for (const input of bad) {
      const r = await raw(kv.port, `PING\r\n${input}`);
      expect(r.text, input).toMatch(/^\+PONG\r\n-ERR Protocol error: [^\r\n]+\r\n$/);
      expect(r.closed).toBe(true);
    }
    // Random garbage: whatever it is, the reply is well-framed text or the connection closes.
    const rand = new Rand(5);
    await Promise.all(Array.from({ length: 20 }, () => raw(kv.port, rand.bytes(1 + rand.int(3000)), 200)));
    const huge = await raw(kv.port, Buffer.concat([Buffer.from('*1\r\n$1000000\r\n'), Buffer.alloc(500_000)]), 300);
    expect(huge.closed).toBe(false); // still waiting for the rest of a legal bulk string
    expect(await redis.ping()).toBe('PONG');
    expect(await redis.set('alive', 'yes')).toBe('OK');
  });

  it.skipIf(REDIS_BENCHMARK === null)('redis-benchmark -n 2000 -t get,set,mset,incr completes', async () => {
    const bench = spawn(REDIS_BENCHMARK!, ['-h', '127.0.0.1', '-p', String(kv.port), '-n', '2000', '-r', '1000', '-t', 'get,set,mset,incr', '-q'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 30_000,
    });
    let out = '';
    bench.stdout.on('data', (d: Buffer) => (out += d.toString()));
    bench.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const [code] = (await once(bench, 'close')) as [number | null];
    expect(code, out).toBe(0);
    for (const t of ['SET', 'GET', 'INCR', 'MSET']) expect(out).toMatch(new RegExp(`${t}[^\\n]*requests per second`));
  });
});

describe('pd3-kv CLI', () => {
  const run = (args: string[], env: Record<string, string> = {}): { status: number | null; stderr: string; stdout: string } => {
    const base = { ...process.env };
    delete base.PD3_TOKEN;
    const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 10_000, env: { ...base, ...env } });
    return { status: r.status, stderr: r.stderr, stdout: r.stdout };
  };

  it('refuses bad flags with exit status 2 and a message naming the flag', () => {
    const cases: Array<[string[], RegExp]> = [
      [['--mode', 'fast'], /--mode: must be one of local, sync/],
      [['--nosuch', '1'], /unknown flag --nosuch/],
      [['--page-size', '5000'], /--page-size: must be a power of two/],
      [['--page-size', '64K', '--region-size', '100K'], /--region-size: must be a multiple/],
      [['--memory-budget', '1G', '--cache-percent', '5'], /either --memory-budget or --cache-percent/],
      [['--cache-percent', '0'], /--cache-percent: must be a percentage/],
      [['--mode', 'sync'], /--memservers: required in sync mode/],
      [['--mode', 'pd3'], /--segment: required in pd3 mode/],
      [['--mode', 'local', '--segment', 'x'], /--segment: only the pd3 modes/],
      [['--mode', 'pd3', '--segment', 'x', '--memservers', '127.0.0.1:7400'], /through the agent/],
      [['--mode', 'sync', '--memservers', '127.0.0.1:7400'], /no auth token/],
      [['--listen', 'nope'], /--listen: expected HOST:PORT/],
      [['--mode', 'sync', '--memservers', '127.0.0.1:7400', '--token', 't', '--zone-wait-us', '50'], /--zone-wait-us: only pd3 mode/],
      [['--mode', 'pd3', '--segment', 'x', '--zone-wait-us', '2000000'], /--zone-wait-us: must be/],
      [['--mode', 'pd3', '--segment', 'x', '--zone-wait-us', '-1'], /--zone-wait-us/],
      [['--mode', 'pd3', '--segment', 'x', '--zone-wait-us', 'soon'], /--zone-wait-us: must be auto or a whole number from 0 to 1000000, got "soon"/],
      [['stray'], /unexpected argument/],
    ];
    for (const [args, message] of cases) {
      const r = run(args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(message);
    }
  });

  it('--help describes the modes; a started server logs ready and stops cleanly on SIGTERM', async () => {
    const help = run(['--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/--mode local\|sync\|async\|leap\|pd3-noprefetch\|pd3/);
    const child = spawn(process.execPath, [CLI, '--listen', '127.0.0.1:0', '--log-level', 'info'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    while (!err.includes('\n')) await new Promise((r) => setTimeout(r, 20));
    const ready = JSON.parse(err.split('\n')[0]!) as { event: string; port: number; component: string; mode: string };
    expect([ready.event, ready.component, ready.mode]).toEqual(['ready', 'pd3-kv', 'local']);
    const client = new Redis({ port: ready.port, host: '127.0.0.1', lazyConnect: true });
    await client.connect();
    expect(await client.set('k', 'v')).toBe('OK');
    client.disconnect();
    child.kill('SIGTERM');
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(0);
    expect(err).toContain('"event":"stopped"');
  });
});
