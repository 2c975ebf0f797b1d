// memserver-record-parser.test.ts — pd3-memserver --record-parser with real processes: refused
// values (exit 2 naming the problem; a JS/TS module refused with the reason; a file that is not a
// parser library fails the start), and a server indexing with a parser plug-in's own record format
// answering PREFETCH over the transport (a small client speaking pd3/transport.h), reporting the
// parser in its ready line and /metrics.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { constants as C } from '../dist/host/index.js';
import { MEMSERVER_CLI, startDaemon, type Daemon } from '../dist/examples/harness/processes.js';
import { kvRecord } from './integration-helpers.js';

const TOKEN = 'record-parser-test';
const WAIT_MS = 10_000;
/** The example plug-in built to read its own record format (test/plugins/example_parser.cpp with
 *  PD3_EXAMPLE_RECORDS=1): next to $PD3_EXAMPLE_PARSER, else in build/. */
const PLUGIN = join(
  process.env.PD3_EXAMPLE_PARSER !== undefined
    ? dirname(process.env.PD3_EXAMPLE_PARSER)
    : fileURLToPath(new URL('../build', import.meta.url)),
  'libpd3_example_record_parser.so',
);

const dir = mkdtempSync(join(tmpdir(), 'pd3-record-parser-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const daemons: Daemon[] = [];
afterEach(async () => {
  await Promise.all(daemons.splice(0).map((d) => d.stop(2000)));
});

/** Runs pd3-memserver with `args` until it exits (it must, within WAIT_MS). */
function runToExit(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const argv = [MEMSERVER_CLI, '--listen', '127.0.0.1:0', '--metrics', 'off', '--capacity', '16M', ...args];
    const child = spawn(process.execPath, argv, {
      env: { ...process.env, PD3_TOKEN: TOKEN },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`pd3-memserver ${args.join(' ')} still running after ${WAIT_MS} ms:\n${stderr}`));
    }, WAIT_MS);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

/** One record of the example plug-in's format: u8 0xE5 | u16 key_len | key | u32 value_len | value. */
function exampleRecord(key: string, value: string): Buffer {
  const k = Buffer.from(key);
  const v = Buffer.from(value);
  const out = Buffer.alloc(7 + k.length + v.length);
  out[0] = 0xe5;
  out.writeUInt16LE(k.length, 1);
  k.copy(out, 3);
  out.writeUInt32LE(v.length, 3 + k.length);
  v.copy(out, 7 + k.length);
  return out;
}

/** A request record and how to read its response record. */
interface Rec {
  bytes: Buffer;
  prefetch: boolean;
}

const SIZEOF_PREFETCH_REQUEST = 8; // pd3_prefetch_request: op_id u16, key_len u16, max_size u32
const SIZEOF_PREFETCH_RESPONSE = 16; // pd3_prefetch_response: op_id, status, size u32, key_len, reserved[3]
let nextId = 1;

function opId(op: number): number {
  return ((op << C.ID_BITS) | (nextId++ & C.ID_MASK)) >>> 0;
}

/** pd3_request (+ data for a WRITE). */
function request(op: number, region: number, offset: number, size: number, data: Buffer = Buffer.alloc(0)): Rec {
  const h = Buffer.alloc(C.SIZEOF_REQUEST); // reserved stays 0
  h.writeUInt16LE(opId(op), C.REQUEST_OP_ID);
  h.writeUInt32LE(region, C.REQUEST_REGION);
  h.writeUInt32LE(offset, C.REQUEST_OFFSET);
  h.writeUInt32LE(size, C.REQUEST_SIZE);
  return { bytes: Buffer.concat([h, data]), prefetch: false };
}

function prefetch(key: string, maxSize = 4096): Rec {
  const k = Buffer.from(key);
  const h = Buffer.alloc(SIZEOF_PREFETCH_REQUEST);
  h.writeUInt16LE(opId(C.OP_PREFETCH), 0);
  h.writeUInt16LE(k.length, 2);
  h.writeUInt32LE(maxSize, 4);
  return { bytes: Buffer.concat([h, k]), prefetch: true };
}

/** A response record: its status (a negative pd3_status, 0 = ok) and data (a PREFETCH's value). */
interface Answer {
  status: number;
  data: Buffer;
}

/** A client of one memory server speaking pd3/transport.h: HELLO, then REQUEST frames in turn. */
class TransportClient {
  private buffered = Buffer.alloc(0);
  private waiting: (() => void) | null = null;
  private seq = 1;

  private constructor(private readonly socket: Socket) {
    socket.on('data', (d: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, d]);
      this.waiting?.();
    });
  }

  static async open(port: number): Promise<TransportClient> {
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const client = new TransportClient(socket);
    const token = Buffer.from(TOKEN);
    const hello = Buffer.alloc(C.SIZEOF_HELLO);
    hello.writeUInt32LE(C.TRANSPORT_MAGIC, 0);
    hello.writeUInt16LE(C.TRANSPORT_VERSION, 4);
    hello.writeUInt16LE(token.length, 6);
    const reply = await client.exchange(C.FRAME_HELLO, 0, Buffer.concat([hello, token]));
    expect(reply.readUInt16LE(6)).toBe(0); // pd3_hello_reply.status
    return client;
  }

  /** Sends one REQUEST frame of `recs` and returns their answers, in order. */
  async run(recs: Rec[]): Promise<Answer[]> {
    const body = await this.exchange(C.FRAME_REQUEST, recs.length, Buffer.concat(recs.map((r) => r.bytes)));
    let at = 0;
    return recs.map((r) => {
      const magnitude = body.readUInt16LE(at + 2); // pd3_response.status / pd3_prefetch_response.status
      const status = magnitude === 0 ? 0 : -magnitude;
      const size = body.readUInt32LE(at + 4);
      if (r.prefetch) {
        const keyLength = body.readUInt16LE(at + 8);
        const dataAt = at + SIZEOF_PREFETCH_RESPONSE + keyLength;
        const dataLength = status === 0 ? size : 0;
        at = dataAt + dataLength;
        return { status, data: body.subarray(dataAt, dataAt + dataLength) };
      }
      const op = body.readUInt16LE(at) >> C.ID_BITS;
      const dataLength = status === 0 && (op === C.OP_READ || op === C.OP_CONTROL) ? size : 0;
      const dataAt = at + C.SIZEOF_RESPONSE;
      at = dataAt + dataLength;
      return { status, data: body.subarray(dataAt, dataAt + dataLength) };
    });
  }

  close(): void {
    this.socket.destroy();
  }

  /** Sends a frame and resolves with the body of the next frame received. */
  private async exchange(kind: number, count: number, body: Buffer): Promise<Buffer> {
    const header = Buffer.alloc(C.SIZEOF_FRAME);
    header.writeUInt32LE(C.SIZEOF_FRAME + body.length, 0);
    header.writeUInt16LE(kind, 4);
    header.writeUInt32LE(count, 8);
    header.writeBigUInt64LE(BigInt(this.seq++), 16);
    this.socket.write(Buffer.concat([header, body]));
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      if (this.buffered.length >= C.SIZEOF_FRAME) {
        const length = this.buffered.readUInt32LE(0);
        if (this.buffered.length >= length) {
          const frame = this.buffered.subarray(C.SIZEOF_FRAME, length);
          this.buffered = this.buffered.subarray(length);
          return frame;
        }
      }
      if (Date.now() > deadline || this.socket.destroyed) throw new Error('no answer from the memory server');
      await new Promise<void>((resolve) => {
        this.waiting = resolve;
        setTimeout(resolve, 100);
      });
    }
  }
}

/** GET http://at/path (the metrics endpoint). */
async function scrape(at: string): Promise<string> {
  const r = await fetch(`http://${at}/metrics`);
  return r.text();
}

describe('pd3-memserver --record-parser: refused values', () => {
  it('exits 2 naming the problem, and says why a JS/TS module cannot be used', async () => {
    writeFileSync(join(dir, 'config-bad-type.json'), JSON.stringify({ recordParser: 42 }));
    writeFileSync(join(dir, 'config-js.json'), JSON.stringify({ recordParser: 'parsers/mine.js' }));
    const cases: Array<[string[], RegExp]> = [
      [
        ['--record-parser', './my-parser.mjs'],
        /--record-parser: "\.\/my-parser\.mjs" is a JS\/TS module.*native network thread.*call into JS per write/,
      ],
      [['--record-parser', 'grpc.ts'], /is a JS\/TS module/],
      [['--record-parser', 'rsp'], /--record-parser: unknown record parser "rsp" \(did you mean resp\?\)/],
      [
        ['--record-parser', '/nonexistent/libparser.so'],
        /--record-parser: parser library \/nonexistent\/libparser\.so: ENOENT/,
      ],
      [['--record-parser', dir], /--record-parser: parser library .* is not a file/],
      [['--record-parser', ''], /--record-parser: must not be empty/],
      [['--config', join(dir, 'config-bad-type.json')], /key "recordParser": must be a string, got a number/],
      [['--config', join(dir, 'config-js.json')], /key "recordParser": "parsers\/mine\.js" is a JS\/TS module/],
    ];
    const results = await Promise.all(cases.map(([args]) => runToExit(args)));
    results.forEach(({ code, stderr }, i) => {
      expect(stderr).toMatch(cases[i]![1]);
      expect(stderr).toMatch(/Run 'pd3-memserver --help'/);
      expect(code, stderr).toBe(2);
    });
  });

  it('fails the start (exit 1) on a file that is not a parser library, naming it', async () => {
    const notALibrary = join(dir, 'libnot-a-parser.so');
    writeFileSync(notALibrary, 'not an ELF file\n');
    const { code, stderr } = await runToExit(['--record-parser', notALibrary]);
    expect(stderr).toMatch(/"event":"start.failed".*recordParser: cannot load parser library .*libnot-a-parser\.so/);
    expect(code).toBe(1);
  });
});

describe('pd3-memserver indexing with a parser plug-in', () => {
  it('answers PREFETCH by the plug-in’s record format and reports the parser', async () => {
    const d = await startDaemon(
      MEMSERVER_CLI,
      ['--listen', '127.0.0.1:0', '--metrics', '127.0.0.1:0', '--capacity', '16M', '--record-parser', PLUGIN],
      TOKEN,
    );
    daemons.push(d);
    expect(d.ready).toMatchObject({ recordParser: PLUGIN, recordFormat: 'example-lines' });
    const client = await TransportClient.open(Number(d.ready.port));
    try {
      const [alloc] = await client.run([request(C.OP_CONTROL, C.CTL_ALLOCATE, 0, 1 << 16)]);
      expect(alloc!.status).toBe(0);
      const region = alloc!.data.readUInt32LE(C.ALLOC_REPLY_REGION);
      const records = Buffer.concat([
        exampleRecord('alpha', 'one'),
        exampleRecord('beta', 'x'.repeat(500)),
        Buffer.alloc(1), // ends the sequence
        exampleRecord('hidden', 'after the end'),
      ]);
      // One frame: the write, then prefetches that see it (batches run in order).
      const answers = await client.run([
        request(C.OP_WRITE, region, 64, records.length, records),
        request(C.OP_WRITE, region, 4096, kvRecord('builtin', 'x').length, kvRecord('builtin', 'x')),
        prefetch('alpha'),
        prefetch('beta'),
        prefetch('beta', 499),
        prefetch('hidden'),
        prefetch('builtin'),
      ]);
      expect(answers.map((a) => a.status)).toEqual([
        0,
        0,
        0,
        0,
        C.status.PD3_E_DEST_SMALL!,
        C.status.PD3_E_NOT_FOUND!,
        C.status.PD3_E_NOT_FOUND!,
      ]);
      expect(answers[2]!.data.toString()).toBe('one');
      expect(answers[3]!.data.toString()).toBe('x'.repeat(500));
      // Overwritten: the key is gone, never the old bytes.
      const overwrite = request(C.OP_WRITE, region, 64, 8, Buffer.alloc(8));
      const after = await client.run([overwrite, prefetch('alpha'), prefetch('beta')]);
      expect(after.map((a) => a.status)).toEqual([0, C.status.PD3_E_NOT_FOUND!, 0]);
    } finally {
      client.close();
    }
    const metrics = await scrape(String(d.ready.metrics));
    expect(metrics).toContain(`pd3_memserver_record_parser_info{parser="${PLUGIN}",format="example-lines"} 1`);
    expect(metrics).toMatch(/^pd3_memserver_record_parser_rejects_total 0$/m);
    expect(metrics).toMatch(/^pd3_memserver_index_keys 1$/m);
  });

  it('keeps the built-in record format by default', async () => {
    const d = await startDaemon(
      MEMSERVER_CLI,
      ['--listen', '127.0.0.1:0', '--metrics', 'off', '--capacity', '16M'],
      TOKEN,
    );
    daemons.push(d);
    expect(d.ready).toMatchObject({ recordParser: 'builtin', recordFormat: 'builtin' });
    const client = await TransportClient.open(Number(d.ready.port));
    try {
      const [alloc] = await client.run([request(C.OP_CONTROL, C.CTL_ALLOCATE, 0, 4096)]);
      const region = alloc!.data.readUInt32LE(C.ALLOC_REPLY_REGION);
      const kv = kvRecord('builtin', 'value');
      const plugin = exampleRecord('alpha', 'one');
      const answers = await client.run([
        request(C.OP_WRITE, region, 0, kv.length, kv),
        request(C.OP_WRITE, region, 1024, plugin.length, plugin),
        prefetch('builtin'),
        prefetch('alpha'),
      ]);
      expect(answers.map((a) => a.status)).toEqual([0, 0, 0, C.status.PD3_E_NOT_FOUND!]);
      expect(answers[2]!.data.toString()).toBe('value');
    } finally {
      client.close();
    }
  });
});
