// pd3-kv-close.test.ts — after a protocol error pd3-kv closes the connection as Redis does: a
// client that keeps writing sees it closed (EPIPE/ECONNRESET or 'close') within a bounded amount of
// data, and the server stops reading from the socket (its total_net_input_bytes stays bounded).
import { once } from 'node:events';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Logger } from '../dist/cli/logger.js';
import { startKv, type KvServer } from '../dist/examples/pd3-kv/index.js';

const quiet = new Logger('pd3-kv', 'error');
/** The most a client may write after the error before it must see the connection closed. */
const BOUND = 1 << 20;
const CHUNK = Buffer.alloc(1024, 'x');

/** Sends `prefix`, then 1 KiB chunks until the connection fails or BOUND bytes are written;
 *  returns what was received, how much was written after the prefix and how it ended. */
async function keepWriting(port: number, prefix: string): Promise<{ text: string; written: number; ended: string }> {
  const sock = connect(port, '127.0.0.1');
  await once(sock, 'connect');
  let text = '';
  let ended = '';
  sock.on('data', (d: Buffer) => (text += d.toString('latin1')));
  sock.on('error', (e: NodeJS.ErrnoException) => (ended ||= e.code ?? e.message));
  sock.on('close', () => (ended ||= 'close'));
  sock.write(prefix);
  let written = 0;
  while (ended === '' && written < BOUND) {
    // Wait for each chunk to be taken by the kernel, so the bytes counted are bytes sent.
    await new Promise<void>((resolve) => sock.write(CHUNK, () => resolve()));
    written += CHUNK.length;
    await new Promise((r) => setImmediate(r));
  }
  // Whatever arrived before the close is still delivered to 'data'.
  if (!sock.destroyed) await Promise.race([once(sock, 'close'), new Promise((r) => setTimeout(r, 2000))]);
  sock.destroy();
  return { text, written, ended };
}

function inputBytes(info: string): number {
  return Number(/total_net_input_bytes:(\d+)/.exec(info)![1]);
}

describe('pd3-kv closes the connection after a protocol error', () => {
  let kv: KvServer;

  beforeAll(async () => {
    kv = await startKv({ listen: '127.0.0.1:0', mode: 'local', logLevel: 'error' }, { logger: quiet });
  });

  afterAll(async () => {
    await kv.close();
  });

  const cases: Array<[string, string]> = [
    ['a bad bulk length', '*1\r\n$abc\r\n'],
    ['a too-big inline request', 'x'.repeat(64 * 1024 + 10)],
    ['QUIT', 'QUIT\r\n'],
  ];
  for (const [what, prefix] of cases) {
    it(`after ${what}, a client that keeps writing sees the connection closed within 1 MiB`, async () => {
      const before = inputBytes(kv.info(['stats']));
      const r = await keepWriting(kv.port, prefix);
      expect(r.ended).not.toBe('');
      expect(r.written).toBeLessThan(BOUND);
      expect(r.text).toMatch(what === 'QUIT' ? /^\+OK\r\n$/ : /^-ERR Protocol error: [^\r\n]+\r\n$/);
      // The server read the request and at most a socket buffer's worth after it, not the stream.
      const read = inputBytes(kv.info(['stats'])) - before;
      expect(read).toBeLessThan(prefix.length + 256 * 1024);
    });
  }

  it('keeps serving other clients', async () => {
    const sock = connect(kv.port, '127.0.0.1');
    await once(sock, 'connect');
    sock.write('PING\r\n');
    const [d] = (await once(sock, 'data')) as [Buffer];
    expect(d.toString()).toBe('+PONG\r\n');
    sock.destroy();
  });
});
