// pd3-kv-expire.test.ts — the expiry options of SET, GETEX, SETEX, PSETEX and the EXPIRE family
// answer as Redis 7.0 does at the edges: option conflicts, 64-bit times beyond 2^53 ms kept exactly,
// times in the past deleting the key, and overflowing times refused with Redis' error text. The
// expected replies were taken from redis-server 7.0 (test/pd3-kv-redis-diff.test.ts compares the
// two servers directly on random streams).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Logger } from '../dist/cli/logger.js';
import { startKv, type KvServer } from '../dist/examples/pd3-kv/index.js';
import { RawRespClient } from './resp-raw-client.js';

const quiet = new Logger('pd3-kv', 'error');
const bad = (cmd: string): string => `-ERR invalid expire time in '${cmd}' command\r\n`;

// [command, reply]; each line runs after the ones before it, on one connection.
const SCRIPT: Array<[string, string]> = [
  ['SET foo bar', '+OK\r\n'],
  ['EXPIRE foo 200 LT GT', '-ERR GT and LT options at the same time are not compatible\r\n'],
  ['EXPIRE foo 200 NX XX', '-ERR NX and XX, GT or LT options at the same time are not compatible\r\n'],
  ['EXPIRE foo 200 NX GT', '-ERR NX and XX, GT or LT options at the same time are not compatible\r\n'],
  ['EXPIRE foo 200 NX LT', '-ERR NX and XX, GT or LT options at the same time are not compatible\r\n'],
  ['EXPIRE foo abc NX XX', '-ERR NX and XX, GT or LT options at the same time are not compatible\r\n'],
  ['EXPIRE foo 200 BAD NX XX', '-ERR Unsupported option BAD\r\n'],
  ['EXPIRE foo 200 XX GT', ':0\r\n'],
  ['EXPIRE nokey 9223370399119966', bad('expire')],
  ['EXPIRE foo 9223370399119966', bad('expire')],
  ['PEXPIRE foo 9223372036854770000', bad('pexpire')],
  ['EXPIRE foo -9223372036854776', bad('expire')],
  ['EXPIREAT foo -9223372036854776', bad('expireat')],
  ['EXPIREAT foo 9223372036854776', bad('expireat')],
  ['PEXPIREAT foo 4503599627370496', ':1\r\n'],
  ['PEXPIRETIME foo', ':4503599627370496\r\n'],
  ['EXPIRE foo 9007199254740', ':1\r\n'],
  ['PEXPIREAT foo 9223372036854770000', ':1\r\n'],
  ['PEXPIRETIME foo', ':9223372036854770000\r\n'],
  ['EXPIRETIME foo', ':9223372036854770\r\n'],
  ['PEXPIREAT foo 9223372036854775807', ':1\r\n'],
  ['EXPIRETIME foo', ':9223372036854776\r\n'],
  ['PEXPIREAT foo 1500000000500', ':1\r\n'],
  ['EXISTS foo', ':0\r\n'],
  ['SET foo bar', '+OK\r\n'],
  ['PEXPIREAT foo -9223372036854770000', ':1\r\n'],
  ['EXISTS foo', ':0\r\n'],
  ['SET foo bar', '+OK\r\n'],
  ['PEXPIREAT foo -4503599627370496', ':1\r\n'],
  ['EXISTS foo', ':0\r\n'],
  ['SET foo bar EX 10000000000000000', bad('set')],
  ['SET foo bar EX -9999999999999999', bad('set')],
  ['SET foo bar EX 0', bad('set')],
  ['SET foo bar PX 9223372036854775807', bad('set')],
  ['SET foo bar EXAT 9223372036854776', bad('set')],
  ['SET foo bar EX abc BAD', '-ERR syntax error\r\n'],
  ['SET foo bar EXAT 9223372036854775', '+OK\r\n'],
  ['PEXPIRETIME foo', ':9223372036854775000\r\n'],
  ['SET foo bar PXAT 9223372036854775807', '+OK\r\n'],
  ['GETEX foo EX 10000000000000000', bad('getex')],
  ['GETEX foo EX -9999999999999999', bad('getex')],
  ['GETEX foo EX abc', '-ERR value is not an integer or out of range\r\n'],
  ['GETEX nokey EX -1', '$-1\r\n'],
  ['GETEX nokey EX abc', '$-1\r\n'],
  ['GETEX nokey BAD', '-ERR syntax error\r\n'],
  ['SETEX foo 0 v', bad('setex')],
  ['SETEX foo 10000000000000000 v', bad('setex')],
  ['PSETEX foo 9223372036854775807 v', bad('psetex')],
  ['PSETEX foo -1 v', bad('psetex')],
  ['PEXPIREAT foo 4102444800600', ':1\r\n'],
  ['EXPIRETIME foo', ':4102444801\r\n'], // rounded to the nearest second, as Redis does
  ['SET foo bar EXAT 1', '+OK\r\n'],
  ['EXISTS foo', ':0\r\n'],
];

describe('pd3-kv expiry edges', () => {
  let kv: KvServer;
  let client: RawRespClient;

  beforeAll(async () => {
    kv = await startKv({ listen: '127.0.0.1:0', mode: 'local', logLevel: 'error' }, { logger: quiet });
    client = await RawRespClient.connect(kv.port);
  });

  afterAll(async () => {
    client.close();
    await kv.close();
  });

  it('answers as redis-server 7.0', async () => {
    const replies = await client.pipeline(SCRIPT.map(([c]) => c.split(' ')));
    const got = SCRIPT.map(([c], i) => [c, replies[i]!.toString('latin1')]);
    expect(got).toEqual(SCRIPT);
  });
});
