// parsers.test.ts — the native parsers from TS: resp and binary through openFlow/parseRequest/
// resync, parseRecord on pd3/record.h records built from the exported constants, loadParser on a
// real plug-in library and its refusals with clear reasons, and argument checks.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { constants } from '../dist/host/index.js';
import { addon } from '../dist/parsers/native.js';
import { binary, loadParser, parserConstants as P, resp, type Access, type Parser } from '../dist/parsers/index.js';

const enc = new TextEncoder();
const text = (s: string): Uint8Array => enc.encode(s);
const show = (accesses: Access[]): string[] => accesses.map((a) => `${a.op} ${Buffer.from(a.key).toString('latin1')}`);

/** One RESP request as client libraries send it. */
function cmd(...args: string[]): string {
  return `*${args.length}\r\n` + args.map((a) => `$${Buffer.byteLength(a, 'latin1')}\r\n${a}\r\n`).join('');
}

/** One binary request (pd3/binproto.h); keys and values are latin1 strings. */
function binRequest(op: number, entries: [string, string?][]): Buffer {
  const body = Buffer.concat(
    entries.map(([k, v]) => {
      const key = Buffer.from(k, 'latin1');
      const parts = [Buffer.alloc(2), key];
      parts[0]!.writeUInt16LE(key.length);
      if (op === P.BIN_PUT) {
        const value = Buffer.from(v ?? '', 'latin1');
        const len = Buffer.alloc(4);
        len.writeUInt32LE(value.length);
        parts.push(len, value);
      }
      return Buffer.concat(parts);
    }),
  );
  const header = Buffer.alloc(P.SIZEOF_BIN_HEADER);
  header.writeUInt32LE(4 + body.length, 0);
  header.writeUInt8(P.BIN_MAGIC, 4);
  header.writeUInt8(op, 5);
  header.writeUInt16LE(entries.length, 6);
  return Buffer.concat([header, body]);
}

/** Records in the built-in format of pd3/record.h, laid out with the exported offsets. */
function records(pairs: [string, string][]): Buffer {
  return Buffer.concat([
    ...pairs.map(([k, v]) => {
      const h = Buffer.alloc(constants.SIZEOF_KV_HEADER);
      h.writeUInt32LE(Buffer.byteLength(k), constants.KV_KEY_LEN);
      h.writeUInt32LE(Buffer.byteLength(v), constants.KV_VALUE_LEN);
      return Buffer.concat([h, Buffer.from(k), Buffer.from(v)]);
    }),
    Buffer.alloc(constants.SIZEOF_KV_HEADER), // end marker
  ]);
}

/** Expects `fn` to throw an Error whose code and message say what went wrong. */
function expectRefusal(fn: () => unknown, code: string, message: RegExp): void {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(Error);
  expect((caught as { code?: string }).code).toBe(code);
  expect((caught as Error).message).toMatch(message);
}

describe('constants', () => {
  it('access ops and the binary format come from the C headers', () => {
    expect(P.ABI_VERSION).toBe(1);
    expect(new Set([P.ACCESS_READ, P.ACCESS_WRITE, P.ACCESS_DELETE]).size).toBe(3);
    expect(P.MIN_ACCESSES).toBeGreaterThanOrEqual(1);
    expect(P.SIZEOF_BIN_HEADER).toBe(8);
    expect(P.BIN_MAGIC).toBe(0xd3);
    expect(P.BIN_MAX_REQUEST).toBe(16 * 1024 * 1024);
  });
});

describe('resp', () => {
  it('parses a pipeline of array and inline requests to accesses in order', () => {
    const flow = resp.openFlow();
    const s = cmd('SET', 'a', '1') + 'get a\r\n' + cmd('MGET', 'b', 'c') + cmd('DEL', 'd') + cmd('PING') + cmd('SET', 'e', 'v', 'GET');
    const r = flow.parseRequest(text(s));
    expect(r).not.toBeNull();
    expect(r!.consumed).toBe(s.length);
    expect(show(r!.accesses)).toEqual(['WRITE a', 'READ a', 'READ b', 'READ c', 'DELETE d', 'READ e']);
    expect(r!.accesses[0]!.key).toBeInstanceOf(Uint8Array);
  });

  it('gives every access of a long pipeline in one call (the binding loops over full outputs)', () => {
    const keys = Array.from({ length: 3000 }, (_, i) => `k${i}`);
    const r = resp.openFlow().parseRequest(text(keys.map((k) => cmd('GET', k)).join('')));
    expect(r!.accesses.map((a) => Buffer.from(a.key).toString())).toEqual(keys);
  });

  it('leaves an incomplete request for later and refuses broken framing with null', () => {
    const flow = resp.openFlow();
    const whole = cmd('GET', 'k');
    for (let cut = 0; cut < whole.length; ++cut) expect(flow.parseRequest(text(whole.slice(0, cut)))).toEqual({ accesses: [], consumed: 0 });
    expect(flow.parseRequest(text('*1\r\n$x\r\n'))).toBeNull();
    expect(flow.parseRequest(text('*9999999\r\n'))).toBeNull();
    const good = cmd('GET', 'a');
    const r = flow.parseRequest(text(good + '*1\r\n$x\r\n'));
    expect(r!.consumed).toBe(good.length);
    expect(show(r!.accesses)).toEqual(['READ a']);
  });

  it('keeps binary keys byte for byte', () => {
    const key = '\0\r\n*$\xff';
    const r = resp.openFlow().parseRequest(Buffer.from(cmd('GET', key), 'latin1'));
    expect(Buffer.from(r!.accesses[0]!.key)).toEqual(Buffer.from(key, 'latin1'));
  });

  it('resyncs to the next array request after a line end', () => {
    const flow = resp.openFlow();
    const req = cmd('GET', 'k');
    expect(flow.resync(text('tail of a value\r\n' + req))).toBe(17);
    expect(flow.resync(text('no request here'))).toBe(-1);
    expect(flow.resync(new Uint8Array(0))).toBe(-1);
  });
});

describe('binary', () => {
  it('GET, PUT and DEL give READ, WRITE and DELETE', () => {
    const s = Buffer.concat([
      binRequest(P.BIN_GET, [['a'], ['b']]),
      binRequest(P.BIN_PUT, [['c', 'value']]),
      binRequest(P.BIN_DEL, [['\0d']]),
    ]);
    const r = binary.openFlow().parseRequest(s);
    expect(r!.consumed).toBe(s.length);
    expect(show(r!.accesses)).toEqual(['READ a', 'READ b', 'WRITE c', 'DELETE \0d']);
  });

  it('refuses a wrong magic, op or length with null, and resyncs past it', () => {
    const flow = binary.openFlow();
    const good = binRequest(P.BIN_GET, [['key']]);
    const badMagic = Buffer.from(good);
    badMagic[4] = 0;
    expect(flow.parseRequest(badMagic)).toBeNull();
    const badOp = Buffer.from(good);
    badOp[5] = 9;
    expect(flow.parseRequest(badOp)).toBeNull();
    const tooLong = Buffer.from(good);
    tooLong.writeUInt32LE(P.BIN_MAX_REQUEST + 1, 0);
    expect(flow.parseRequest(tooLong)).toBeNull();
    expect(flow.parseRequest(good.subarray(0, 9))).toEqual({ accesses: [], consumed: 0 });
    expect(flow.resync(Buffer.concat([Buffer.from('junk'), good]))).toBe(4);
  });
});

describe('parseRecord', () => {
  it('lists the keys of pd3/record.h records with their value offsets, for both built-ins', () => {
    const buf = records([
      ['user:1', 'alice'],
      ['k', ''],
      ['long-key', 'x'.repeat(1000)],
    ]);
    for (const p of [resp, binary] as Parser[]) {
      const keys = p.parseRecord(buf);
      expect(keys.map((k) => Buffer.from(k.key).toString())).toEqual(['user:1', 'k', 'long-key']);
      const h = constants.SIZEOF_KV_HEADER;
      const end1 = h + 6 + 5; // record 1: header, "user:1", "alice"
      const end2 = end1 + h + 1; // record 2: header, "k", no value
      expect(keys.map((k) => [k.offset, k.length])).toEqual([
        [h + 6, 5],
        [end1 + h + 1, 0],
        [end2 + h + 8, 1000],
      ]);
      expect(Buffer.from(buf.subarray(keys[0]!.offset, keys[0]!.offset + keys[0]!.length)).toString()).toBe('alice');
      expect(p.parseRecord(buf.subarray(0, buf.length - constants.SIZEOF_KV_HEADER - 1))).toHaveLength(2); // truncated
      expect(p.parseRecord(new Uint8Array(3))).toEqual([]);
    }
  });

  it('parses many records in one call', () => {
    const pairs = Array.from({ length: 5000 }, (_, i): [string, string] => [`key${i}`, `v${i}`]);
    expect(resp.parseRecord(records(pairs)).map((k) => Buffer.from(k.key).toString())).toEqual(pairs.map(([k]) => k));
  });
});

const pluginPath =
  process.env.PD3_EXAMPLE_PARSER ?? fileURLToPath(new URL('../build/libpd3_example_parser.so', import.meta.url));

describe('loadParser', () => {
  it('names the built-ins', () => {
    expect(loadParser('resp').name).toBe('resp');
    expect(loadParser('binary').isPlugin).toBe(false);
  });

  it('refuses what it cannot use, saying why', () => {
    expectRefusal(() => loadParser('/nonexistent/libparser.so'), 'PD3_E_NOT_FOUND', /\/nonexistent\/libparser\.so: No such file/);
    expectRefusal(() => loadParser('nosuchparser'), 'PD3_E_NOT_FOUND', /no built-in parser named 'nosuchparser'/);
    expectRefusal(() => loadParser(''), 'PD3_E_INVAL', /required/);
    expectRefusal(() => loadParser('libm.so.6'), 'PD3_E_INVAL', /does not export pd3_parser_entry/);
    const dir = mkdtempSync(join(tmpdir(), 'pd3-parsers-'));
    try {
      const notElf = join(dir, 'libnotelf.so');
      writeFileSync(notElf, 'not a library\n');
      expectRefusal(() => loadParser(notElf), 'PD3_E_INVAL', /cannot load parser library/);
    } finally {
      rmSync(dir, { recursive: true });
    }
  });

  it('loads a real plug-in library whose flows keep their own state', () => {
    expect(existsSync(pluginPath), `${pluginPath} (build target pd3_example_parser, docs/parsers.md)`).toBe(true);
    const p = loadParser(pluginPath);
    expect(p.name).toBe('example-lines');
    expect(p.isPlugin).toBe(true);
    const a = p.openFlow();
    const b = p.openFlow();
    expect(show(a.parseRequest(text('USE t1\nGET x\nPUT y 1\n'))!.accesses)).toEqual(['READ t1:x', 'WRITE t1:y']);
    expect(show(b.parseRequest(text('DEL x\n'))!.accesses)).toEqual(['DELETE x']);
    expect(a.parseRequest(text('FROB\n'))).toBeNull();
    expect(a.resync(text('lue\nGET k\n'))).toBe(4);
    // No parse_record in the plug-in: the built-in record format.
    expect(p.parseRecord(records([['r', 'v']])).map((k) => Buffer.from(k.key).toString())).toEqual(['r']);
    a.close();
    b.close();
    p.close();
    expect(() => p.openFlow()).toThrow(/closed/);
  });

  it('checks its arguments', () => {
    const flow = resp.openFlow();
    expect(() => flow.parseRequest('GET k\n' as unknown as Uint8Array)).toThrow(TypeError);
    const binding = addon as unknown as { NativeFlow: new (parser: unknown) => unknown; NativeParser: new (x: unknown) => unknown };
    expect(() => new binding.NativeFlow({})).toThrow(TypeError);
    expect(() => new binding.NativeParser(42)).toThrow(TypeError);
  });
});
