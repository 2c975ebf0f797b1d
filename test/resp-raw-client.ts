// resp-raw-client.ts — a RESP client for tests that compare servers byte for byte: it sends
// commands as arrays of bulk strings and hands back each reply as the exact bytes the server sent
// (framed, not decoded), in order.
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';

/** Encodes one command as a RESP array of bulk strings. */
export function encodeCommand(args: ReadonlyArray<string | Buffer>): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const a of args) {
    const b = typeof a === 'string' ? Buffer.from(a, 'latin1') : a;
    parts.push(Buffer.from(`$${b.length}\r\n`), b, Buffer.from('\r\n'));
  }
  return Buffer.concat(parts);
}

/** The end of the reply starting at `pos` in `buf`, or -1 while it is incomplete. */
export function replyEnd(buf: Buffer, pos: number): number {
  if (pos >= buf.length) return -1;
  const cr = buf.indexOf('\r\n', pos);
  if (cr < 0) return -1;
  const type = String.fromCharCode(buf[pos]!);
  if (type === '+' || type === '-' || type === ':') return cr + 2;
  const n = Number(buf.toString('latin1', pos + 1, cr));
  if (type === '$') {
    if (n < 0) return cr + 2;
    return cr + 2 + n + 2 <= buf.length ? cr + 2 + n + 2 : -1;
  }
  if (type === '*') {
    let at = cr + 2;
    for (let i = 0; i < n; ++i) {
      at = replyEnd(buf, at);
      if (at < 0) return -1;
    }
    return at;
  }
  throw new Error(`unexpected reply type ${JSON.stringify(type)} at ${pos}`);
}

/** One connection that sends pipelines of commands and returns their raw replies. */
export class RawRespClient {
  private buf = Buffer.alloc(0);
  private waiter: (() => void) | null = null;
  private closed = false;

  private constructor(private readonly sock: Socket) {
    sock.on('data', (d: Buffer) => {
      this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d]);
      this.waiter?.();
    });
    sock.on('close', () => {
      this.closed = true;
      this.waiter?.();
    });
    sock.on('error', () => undefined);
  }

  static async connect(port: number, host = '127.0.0.1'): Promise<RawRespClient> {
    const sock = connect(port, host);
    await once(sock, 'connect');
    sock.setNoDelay(true);
    return new RawRespClient(sock);
  }

  /** Sends the commands in one write and resolves with their replies, one Buffer each. */
  async pipeline(commands: ReadonlyArray<ReadonlyArray<string | Buffer>>, timeoutMs = 10_000): Promise<Buffer[]> {
    this.sock.write(Buffer.concat(commands.map(encodeCommand)));
    const replies: Buffer[] = [];
    const deadline = Date.now() + timeoutMs;
    let pos = 0;
    while (replies.length < commands.length) {
      const end = replyEnd(this.buf, pos);
      if (end >= 0) {
        replies.push(this.buf.subarray(pos, end));
        pos = end;
        continue;
      }
      if (this.closed) throw new Error(`connection closed after ${replies.length} of ${commands.length} replies`);
      if (Date.now() > deadline) throw new Error(`timed out after ${replies.length} of ${commands.length} replies`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 100);
        this.waiter = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.waiter = null;
    }
    this.buf = this.buf.subarray(pos);
    return replies.map((r) => Buffer.from(r));
  }

  close(): void {
    this.sock.destroy();
  }
}
