// grpc-parser.test.ts — the gRPC parser piece by piece: HPACK against RFC 7541 Appendix C, the Huffman
// code, HTTP/2 framing (splits at every byte, CONTINUATION, padding, interleaving), gRPC messages,
// lost sync and resync, config errors, and parseRecord.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import protobuf from 'protobufjs';
import { afterAll, describe, expect, it } from 'vitest';
import { constants as C } from '../dist/host/index.js';
import { HUFFMAN_CODES } from '../dist/parsers/grpc/hpack-huffman-table.js';
import { huffmanDecode } from '../dist/parsers/grpc/hpack-huffman.js';
import { HpackDecoder, type HeaderField } from '../dist/parsers/grpc/hpack.js';
import {
  GrpcConfigError, grpcParser, loadGrpcConfig, type GrpcConfig, type GrpcLimits, type GrpcParser,
} from '../dist/parsers/index.js';
import {
  F, PREFACE, T, TestHpackEncoder, bytes, concat, connectionStart, feed, frame, grpcMessage, grpcRequestHeaders,
  hex, huffmanEncode, prng, show,
} from './fixtures/grpc/h2-kit.js';
import { FIXTURES, STORE_CONFIG, STORE_PROTO } from './fixtures/grpc/grpc-live.js';

const root = new protobuf.Root().loadSync(STORE_PROTO, { keepCase: true });
/** A request message of `type` (store.<type>) encoded by protobufjs. */
const msg = (type: string, value: Record<string, unknown>): Uint8Array => {
  const t = root.lookupType(`store.${type}`);
  return t.encode(t.fromObject(value)).finish();
};

const storeConfig = loadGrpcConfig(STORE_CONFIG);
const parser = grpcParser(storeConfig);
const parserWith = (limits: Partial<GrpcLimits>): GrpcParser => grpcParser({ ...storeConfig, limits });

/** HEADERS (one frame, END_HEADERS) opening `streamId` for `method` of store.Store. */
function open(encoder: TestHpackEncoder, streamId: number, method: string, flags = 0): Uint8Array {
  return frame(T.HEADERS, F.END_HEADERS | flags, streamId, encoder.encode(grpcRequestHeaders(`/store.Store/${method}`)));
}
const data = (streamId: number, payload: Uint8Array, flags = 0, pad?: number): Uint8Array =>
  frame(T.DATA, flags, streamId, payload, pad);
/** A whole unary call: HEADERS, then one DATA with the message and END_STREAM. */
const unary = (encoder: TestHpackEncoder, streamId: number, method: string, type: string, value: Record<string, unknown>): Uint8Array =>
  concat(open(encoder, streamId, method), data(streamId, grpcMessage(msg(type, value)), F.END_STREAM));

const parseWhole = (stream: Uint8Array, p: GrpcParser = parser) => {
  const flow = p.openFlow();
  return { flow, result: feed(flow, stream) };
};

describe('HPACK (RFC 7541 Appendix C)', () => {
  const table = (d: HpackDecoder): string[] => d.tableEntries().map(([n, v]) => `${n}: ${v}`);

  it('C.2: one representation of each kind', () => {
    const cases: Array<[string, HeaderField[], string[], number]> = [
      ['400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572', [['custom-key', 'custom-header']], ['custom-key: custom-header'], 55],
      ['040c 2f73 616d 706c 652f 7061 7468', [[':path', '/sample/path']], [], 0],
      ['1008 7061 7373 776f 7264 0673 6563 7265 74', [['password', 'secret']], [], 0],
      ['82', [[':method', 'GET']], [], 0],
    ];
    for (const [block, fields, entries, size] of cases) {
      const d = new HpackDecoder();
      expect(d.decode(hex(block))).toEqual({ ok: true, fields });
      expect(table(d)).toEqual(entries);
      expect(d.tableBytes).toBe(size);
    }
  });

  const requests: HeaderField[][] = [
    [[':method', 'GET'], [':scheme', 'http'], [':path', '/'], [':authority', 'www.example.com']],
    [[':method', 'GET'], [':scheme', 'http'], [':path', '/'], [':authority', 'www.example.com'], ['cache-control', 'no-cache']],
    [[':method', 'GET'], [':scheme', 'https'], [':path', '/index.html'], [':authority', 'www.example.com'], ['custom-key', 'custom-value']],
  ];
  const requestTables: Array<[string[], number]> = [
    [[':authority: www.example.com'], 57],
    [['cache-control: no-cache', ':authority: www.example.com'], 110],
    [['custom-key: custom-value', 'cache-control: no-cache', ':authority: www.example.com'], 164],
  ];
  const responses: HeaderField[][] = [
    [[':status', '302'], ['cache-control', 'private'], ['date', 'Mon, 21 Oct 2013 20:13:21 GMT'], ['location', 'https://www.example.com']],
    [[':status', '307'], ['cache-control', 'private'], ['date', 'Mon, 21 Oct 2013 20:13:21 GMT'], ['location', 'https://www.example.com']],
    [[':status', '200'], ['cache-control', 'private'], ['date', 'Mon, 21 Oct 2013 20:13:22 GMT'], ['location', 'https://www.example.com'],
      ['content-encoding', 'gzip'], ['set-cookie', 'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1']],
  ];
  const responseTables: Array<[string[], number]> = [
    [['location: https://www.example.com', 'date: Mon, 21 Oct 2013 20:13:21 GMT', 'cache-control: private', ':status: 302'], 222],
    [[':status: 307', 'location: https://www.example.com', 'date: Mon, 21 Oct 2013 20:13:21 GMT', 'cache-control: private'], 222],
    [['set-cookie: foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1', 'content-encoding: gzip', 'date: Mon, 21 Oct 2013 20:13:22 GMT'], 215],
  ];

  const sequences: Array<[string, number, string[], HeaderField[][], Array<[string[], number]>]> = [
    ['C.3 requests without Huffman', 4096, [
      '8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d',
      '8286 84be 5808 6e6f 2d63 6163 6865',
      '8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65',
    ], requests, requestTables],
    ['C.4 requests with Huffman', 4096, [
      '8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff',
      '8286 84be 5886 a8eb 1064 9cbf',
      '8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf',
    ], requests, requestTables],
    ['C.5 responses without Huffman, 256-byte table', 256, [
      '4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d',
      '4803 3330 37c1 c0bf',
      '88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31',
    ], responses, responseTables],
    ['C.6 responses with Huffman, 256-byte table', 256, [
      '4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3',
      '4883 640e ffc1 c0bf',
      '88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07',
    ], responses, responseTables],
  ];
  for (const [name, tableSize, blocks, fieldLists, tables] of sequences) {
    it(`${name}: fields, then the dynamic table's entries and size after each block`, () => {
      const d = new HpackDecoder({ initialTableBytes: tableSize });
      blocks.forEach((block, i) => {
        expect(d.decode(hex(block))).toEqual({ ok: true, fields: fieldLists[i] });
        expect(table(d)).toEqual(tables[i]![0]);
        expect(d.tableBytes).toBe(tables[i]![1]);
      });
    });
  }

  it('size updates evict, and an entry larger than the table empties it without error', () => {
    const d = new HpackDecoder();
    expect(d.decode(hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572')).ok).toBe(true);
    expect(d.decode(hex('20 3f e1 1f 82'))).toEqual({ ok: true, fields: [[':method', 'GET']] }); // 0, then 4096
    expect(d.tableBytes).toBe(0);
    expect(d.maxTableBytes).toBe(4096);
    const small = new HpackDecoder({ initialTableBytes: 60 });
    expect(small.decode(hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572')).ok).toBe(true);
    expect(small.decode(concat(hex('40 01 61'), hpackValue('x'.repeat(40)))).ok).toBe(true);
    expect(small.tableEntries()).toEqual([]);
  });

  it('literals without indexing and never indexed leave the table alone; names may come from it', () => {
    const d = new HpackDecoder();
    const e = new TestHpackEncoder();
    d.decode(e.encode([['x-a', '1']]));
    expect(d.decode(e.encode([['x-a', '2'], ['x-b', '3']], 'plain'))).toEqual({ ok: true, fields: [['x-a', '2'], ['x-b', '3']] });
    expect(d.decode(e.encode([['x-a', '4']], 'never'))).toEqual({ ok: true, fields: [['x-a', '4']] });
    expect(d.tableEntries()).toEqual([['x-a', '1']]);
  });

  it('many blocks from a mirroring encoder, with and without Huffman, through evictions', () => {
    const random = prng(3);
    for (const huffman of [false, true]) {
      const d = new HpackDecoder();
      const e = new TestHpackEncoder(huffman);
      for (let i = 0; i < 2000; i++) {
        const fields: Array<[string, string]> = [[':path', `/p${Math.floor(random() * 50)}`], [`x-${Math.floor(random() * 30)}`, 'v'.repeat(Math.floor(random() * 300))]];
        if (i % 500 === 250) e.resize(1000 + Math.floor(random() * 3000));
        const mode = (['index', 'plain', 'never'] as const)[i % 3]!;
        expect(d.decode(e.encode(fields, mode))).toEqual({ ok: true, fields });
      }
    }
  });

  it('refuses malformed blocks with a reason', () => {
    const refused: Array<[string, RegExp, number?]> = [
      ['80', /index 0/],
      ['be', /past the end/],
      ['82 3f e1 1f', /size update after a header field/],
      ['3f e1 1f', /exceeds 1000/, 1000],
      ['ff ff ff ff ff 0f', /too large/],
      ['ff 80 80 80 80 80 00', /too many octets/],
      ['ff', /past the end of the block/],
      ['40 0a 63', /runs past the end/],
      ['41', /string literal missing/],
      ['41 84 ff ff ff ff', /invalid Huffman/],
    ];
    for (const [block, reason, limit] of refused) {
      const result = new HpackDecoder(limit ? { tableBytesLimit: limit } : {}).decode(hex(block));
      expect(result.ok, block).toBe(false);
      if (!result.ok) expect(result.reason).toMatch(reason);
    }
  });
});

/** A literal value string (no Huffman) in HPACK encoding. */
function hpackValue(value: string): Uint8Array {
  return concat(Uint8Array.of(value.length), bytes(value));
}

describe('Huffman code (RFC 7541 Appendix B)', () => {
  it('is the canonical prefix code the appendix describes, over 257 symbols', () => {
    expect(HUFFMAN_CODES).toHaveLength(257);
    // Complete: the Kraft sum of a full binary code is exactly 1.
    expect(HUFFMAN_CODES.reduce((sum, [, bits]) => sum + 2 ** -bits, 0)).toBe(1);
    // Canonical: ordered by (length, symbol), each code is the previous + 1, shifted to its length.
    const ordered = HUFFMAN_CODES.map(([code, bits], symbol) => ({ code, bits, symbol }))
      .sort((a, b) => a.bits - b.bits || a.symbol - b.symbol);
    let expected = 0;
    ordered.forEach((row, i) => {
      if (i > 0) expected = (expected + 1) * 2 ** (row.bits - ordered[i - 1]!.bits);
      expect(row.code, `symbol ${row.symbol}`).toBe(expected);
    });
  });

  it('decodes every octet, alone and in long strings', () => {
    const latin1 = (octets: Uint8Array): string => Buffer.from(octets).toString('latin1');
    for (let octet = 0; octet < 256; octet++) {
      const encoded = huffmanEncode(Uint8Array.of(octet));
      expect(huffmanDecode(encoded, 0, encoded.length)).toBe(String.fromCharCode(octet));
    }
    const random = prng(9);
    for (let i = 0; i < 200; i++) {
      const text = Uint8Array.from({ length: Math.floor(random() * 3000) }, () => Math.floor(random() * 256));
      const encoded = huffmanEncode(text);
      expect(huffmanDecode(encoded, 0, encoded.length)).toBe(latin1(text));
      // Decoding from inside a larger buffer reads only the range given.
      const framed = concat(Uint8Array.of(0, 0, 0), encoded, Uint8Array.of(0));
      expect(huffmanDecode(framed, 3, 3 + encoded.length)).toBe(latin1(text));
    }
  });

  it('refuses EOS in the data, padding over 7 bits and padding that is not all ones', () => {
    expect(huffmanDecode(hex('ffffffff'), 0, 4)).toBeNull(); // 30 ones = EOS
    expect(huffmanDecode(hex('1f ff'), 0, 2)).toBeNull(); // 'a' + 11 bits of padding
    expect(huffmanDecode(hex('18'), 0, 1)).toBeNull(); // 'a' + padding 000
    expect(huffmanDecode(hex('1f'), 0, 1)).toBe('a');
    expect(huffmanDecode(hex('fe'), 0, 1)).toBeNull(); // stops inside the code of '!', not on padding
    expect(huffmanDecode(hex('00 6e ff'), 0, 3)).toBe('01B'); // exactly 7 bits of padding
    expect(huffmanDecode(hex('00 6e ff ff'), 0, 4)).toBeNull(); // 15 bits of padding
    expect(huffmanDecode(new Uint8Array(0), 0, 0)).toBe('');
  });
});

describe('HTTP/2 framing', () => {
  /** A connection with every framing feature, and the accesses it must give. */
  function richConnection(): { stream: Uint8Array; expected: string[] } {
    const e = new TestHpackEncoder(true);
    // Blocks are encoded in the order they are sent: each one changes the encoder's table.
    const first = unary(e, 1, 'Get', 'GetRequest', { id: Buffer.from('alpha') });
    const getBlock = e.encode(grpcRequestHeaders('/store.Store/MultiGet', [['x-long', 'q'.repeat(120)]]));
    const third = Math.floor(getBlock.length / 3);
    const putStream = [msg('PutRequest', { key: 's1' }), msg('PutRequest', { key: 's2', value: Buffer.alloc(40, 1) }), msg('PutRequest', { key: 's3' })]
      .map((m) => grpcMessage(m));
    const streamed = concat(...putStream);
    const cut1 = putStream[0]!.length + 7;
    const cut2 = cut1 + 30;
    const stream = concat(
      connectionStart(),
      first,
      frame(T.WINDOW_UPDATE, 0, 0, hex('00010000')),
      frame(T.PING, 0, 0, hex('0102030405060708')),
      // HEADERS with PRIORITY and padding, continued twice.
      frame(T.HEADERS, F.PRIORITY, 3, concat(hex('80000001 10'), getBlock.subarray(0, third)), 5),
      frame(T.CONTINUATION, 0, 3, getBlock.subarray(third, 2 * third)),
      frame(T.CONTINUATION, F.END_HEADERS, 3, getBlock.subarray(2 * third)),
      open(e, 5, 'PutStream'),
      data(3, grpcMessage(msg('MultiGetRequest', { ids: [Buffer.from('b1'), Buffer.from('b2')] })), F.END_STREAM, 17),
      data(5, streamed.subarray(0, cut1)),
      open(e, 7, 'Put'),
      data(5, streamed.subarray(cut1, cut2), 0, 0),
      data(7, grpcMessage(msg('PutRequest', { key: 'p1', value: Buffer.from('v') })), F.END_STREAM),
      frame(0x42, 0xff, 5, bytes('an extension frame')),
      frame(T.PRIORITY, 0, 9, hex('00000003 20')),
      unary(e, 9, 'Stats', 'Empty', {}),
      data(5, streamed.subarray(cut2)),
      data(5, new Uint8Array(0), F.END_STREAM),
      open(e, 11, 'Get'),
      data(11, grpcMessage(bytes('gzipped bytes'), true)),
      data(11, grpcMessage(msg('GetRequest', { id: Buffer.from('after-compressed') })), F.END_STREAM),
      open(e, 13, 'Put'),
      data(13, grpcMessage(msg('PutRequest', { key: 'never-finished' })).subarray(0, 6)),
      frame(T.RST_STREAM, 0, 13, hex('00000008')),
      frame(T.SETTINGS, F.ACK, 0, new Uint8Array(0)),
      unary(e, 15, 'Delete', 'DeleteRequest', { id: '18446744073709551615' }),
      frame(T.GOAWAY, 0, 0, hex('0000000f 00000000')),
    );
    const expected = ['READ:alpha', 'READ:b1', 'READ:b2', 'WRITE:s1', 'WRITE:p1', 'WRITE:s2', 'WRITE:s3', 'READ:after-compressed', 'DELETE:18446744073709551615'];
    return { stream, expected };
  }

  it('parses a connection with CONTINUATION, padding, PRIORITY, interleaved streams and control frames', () => {
    const { stream, expected } = richConnection();
    const { flow, result } = parseWhole(stream);
    expect(flow.stats.lostReason).toBeNull();
    expect(result.synced).toBe(true);
    expect(result.consumed).toBe(stream.length);
    expect(show(result.accesses)).toEqual(expected);
    expect(flow.stats).toMatchObject({ streams: 8, compressed: 1, truncated: 1, undecodable: 0, lostReason: null });
  });

  it('gives the same accesses when split at every byte position, and fed byte by byte', () => {
    const { stream, expected } = richConnection();
    for (let cut = 0; cut <= stream.length; cut++) {
      const sizes = [cut, stream.length - cut].filter((n) => n > 0);
      const result = feed(parser.openFlow(), stream, () => sizes.shift() ?? stream.length);
      expect(show(result.accesses), `split at ${cut}`).toEqual(expected);
    }
    expect(show(feed(parser.openFlow(), stream, () => 1).accesses)).toEqual(expected);
  });

  it('consumes partial frame payloads as they come, holding back only incomplete frame headers', () => {
    const e = new TestHpackEncoder();
    const start = concat(connectionStart(), open(e, 1, 'Put'));
    const big = grpcMessage(msg('PutRequest', { key: 'big', value: Buffer.alloc(100_000, 7) }));
    // One DATA frame of 100 KB: larger than the 16 KiB default, accepted (the server's limit is unknown).
    const stream = concat(start, data(1, big, F.END_STREAM));
    const flow = parser.openFlow();
    const first = flow.parseRequest(stream.subarray(0, start.length + 9 + 50_000))!;
    expect(first).toEqual({ accesses: [], consumed: start.length + 9 + 50_000 });
    const partialHeader = flow.parseRequest(stream.subarray(start.length + 9 + 50_000))!;
    expect(show(partialHeader.accesses)).toEqual(['WRITE:big']);
    const flow2 = parser.openFlow();
    expect(flow2.parseRequest(concat(start, hex('0000')))).toEqual({ accesses: [], consumed: start.length });
  });

  it('reassembles a message split across DATA frames, and several messages in one frame', () => {
    const e = new TestHpackEncoder();
    const message = grpcMessage(msg('PutRequest', { key: 'spanning', value: Buffer.alloc(40_000, 3) }));
    const frames: Uint8Array[] = [];
    for (let at = 0; at < message.length; at += 16384) frames.push(data(1, message.subarray(at, at + 16384)));
    const many = concat(...['m1', 'm2', 'm3'].map((key) => grpcMessage(msg('PutRequest', { key }))));
    const stream = concat(connectionStart(), open(e, 1, 'PutStream'), ...frames, data(1, many, F.END_STREAM));
    expect(show(parseWhole(stream).result.accesses)).toEqual(['WRITE:spanning', 'WRITE:m1', 'WRITE:m2', 'WRITE:m3']);
  });

  it('orders accesses by message completion across interleaved streams', () => {
    const e = new TestHpackEncoder();
    const a = grpcMessage(msg('GetRequest', { id: Buffer.from('first-opened') }));
    const b = grpcMessage(msg('GetRequest', { id: Buffer.from('second-opened') }));
    const stream = concat(
      connectionStart(), open(e, 1, 'Get'), open(e, 3, 'Get'),
      data(1, a.subarray(0, 4)), data(3, b.subarray(0, 9)), data(3, b.subarray(9), F.END_STREAM), data(1, a.subarray(4), F.END_STREAM),
    );
    expect(show(parseWhole(stream).result.accesses)).toEqual(['READ:second-opened', 'READ:first-opened']);
  });

  it('skips compressed messages, oversize messages and messages over the connection budget, then goes on', () => {
    const e = new TestHpackEncoder();
    const stream = concat(
      connectionStart(), open(e, 1, 'PutStream'),
      data(1, grpcMessage(msg('PutRequest', { key: 'zipped' }), true)),
      data(1, grpcMessage(msg('PutRequest', { key: 'huge', value: Buffer.alloc(500) }))),
      data(1, grpcMessage(msg('PutRequest', { key: 'small' })), F.END_STREAM),
    );
    const { flow, result } = parseWhole(stream, parserWith({ maxMessageBytes: 100 }));
    expect(show(result.accesses)).toEqual(['WRITE:small']);
    expect(flow.stats).toMatchObject({ compressed: 1, oversize: 1, messages: 1 });

    const e2 = new TestHpackEncoder();
    const twoPartial = concat(
      connectionStart(), open(e2, 3, 'Put'), open(e2, 5, 'Put'),
      data(3, grpcMessage(msg('PutRequest', { key: 'a', value: Buffer.alloc(80) })).subarray(0, 10)),
      data(5, grpcMessage(msg('PutRequest', { key: 'b', value: Buffer.alloc(80) }))),
    );
    const budget = parseWhole(twoPartial, parserWith({ maxBufferedBytes: 120 }));
    expect(budget.flow.stats.lostReason).toBeNull();
    expect(budget.result.accesses).toEqual([]);
    expect(budget.flow.stats.overBudget).toBe(1);
  });

  it('forgets the oldest stream when maxStreams are open', () => {
    const e = new TestHpackEncoder();
    const m = (key: string) => grpcMessage(msg('GetRequest', { id: Buffer.from(key) }));
    const stream = concat(
      connectionStart(), open(e, 1, 'Get'), data(1, m('one').subarray(0, 3)), open(e, 3, 'Get'), open(e, 5, 'Get'),
      data(1, m('one').subarray(3), F.END_STREAM), data(3, m('three'), F.END_STREAM), data(5, m('five'), F.END_STREAM),
    );
    const { flow, result } = parseWhole(stream, parserWith({ maxStreams: 2 }));
    expect(show(result.accesses)).toEqual(['READ:three', 'READ:five']);
    expect(flow.stats).toMatchObject({ evictedStreams: 1, truncated: 1 });
  });

  it('passes over undecodable messages and unconfigured or non-gRPC requests', () => {
    const e = new TestHpackEncoder();
    const stream = concat(
      connectionStart(),
      open(e, 1, 'Get'), data(1, grpcMessage(hex('ffffffff')), F.END_STREAM),
      frame(T.HEADERS, F.END_HEADERS | F.END_STREAM, 3, e.encode([[':method', 'GET'], [':path', '/index.html']])),
      unary(e, 5, 'Stats', 'Empty', {}),
      unary(e, 7, 'Get', 'GetRequest', { id: Buffer.from('ok') }),
    );
    const { flow, result } = parseWhole(stream);
    expect(show(result.accesses)).toEqual(['READ:ok']);
    expect(flow.stats).toMatchObject({ undecodable: 1, messages: 1, streams: 4 });
  });

  it('turns fields into keys: bytes, UTF-8 strings, decimal integers, repeated and nested paths, presence', () => {
    const e = new TestHpackEncoder();
    const stream = concat(
      connectionStart(),
      unary(e, 1, 'Get', 'GetRequest', { id: Buffer.from([0, 255, 10]) }),
      unary(e, 3, 'Put', 'PutRequest', { key: 'ключ' }),
      unary(e, 5, 'Delete', 'DeleteRequest', {}), // proto3: id 0 is not on the wire, the server reads 0
      unary(e, 7, 'Get', 'GetRequest', {}), // an empty key is no key
      unary(e, 9, 'Lookup', 'LookupRequest', { user: { id: '-9007199254740993' }, tag: 't' }),
      unary(e, 11, 'Lookup', 'LookupRequest', { user: { name: 'no id' } }), // optional tag absent
      unary(e, 13, 'Lookup', 'LookupRequest', {}), // no user at all
      unary(e, 15, 'BatchPut', 'BatchPutRequest', { items: [{ key: 'i1' }, { key: '' }, { key: 'i3' }] }),
      unary(e, 17, 'MultiGet', 'MultiGetRequest', { ids: [Buffer.from('x'), Buffer.alloc(C.MAX_KEY_LEN + 1), Buffer.from('y')] }),
    );
    const { result } = parseWhole(stream);
    expect(result.accesses[0]).toEqual({ key: Uint8Array.of(0, 255, 10), op: 'READ' });
    expect(Buffer.from(result.accesses[1]!.key).toString('utf8')).toBe('ключ');
    expect(show(result.accesses.slice(2))).toEqual([
      'DELETE:0', 'READ:-9007199254740993', 'READ:t', 'READ:0', 'WRITE:i1', 'WRITE:i3', 'READ:x', 'READ:y',
    ]);
  });
});

describe('lost sync and resync', () => {
  const e = (): TestHpackEncoder => new TestHpackEncoder();
  const start = connectionStart();
  const faults: Array<[string, Uint8Array, RegExp]> = [
    ['not HTTP/2', bytes('GET / HTTP/1.1\r\nHost: x\r\n\r\n'), /preface/],
    ['no SETTINGS first', concat(PREFACE, frame(T.PING, 0, 0, new Uint8Array(8))), /not followed by SETTINGS/],
    ['DATA on stream 0', concat(start, data(0, hex('00'))), /DATA on stream 0/],
    ['DATA on an idle stream', concat(start, data(5, hex('00'))), /idle stream 5/],
    ['HEADERS on an even stream', concat(start, frame(T.HEADERS, F.END_HEADERS, 2, hex('82'))), /even stream/],
    ['PUSH_PROMISE', concat(start, frame(T.PUSH_PROMISE, 0, 1, hex('00000002'))), /PUSH_PROMISE/],
    ['PING of 7 bytes', concat(start, frame(T.PING, 0, 0, new Uint8Array(7))), /PING of length 7/],
    ['SETTINGS of 5 bytes', concat(start, frame(T.SETTINGS, 0, 0, new Uint8Array(5))), /SETTINGS of length 5/],
    ['SETTINGS ACK with a payload', concat(start, frame(T.SETTINGS, F.ACK, 0, new Uint8Array(6))), /ACK/],
    ['RST_STREAM on stream 0', concat(start, frame(T.RST_STREAM, 0, 0, new Uint8Array(4))), /RST_STREAM on stream 0/],
    ['GOAWAY too short', concat(start, frame(T.GOAWAY, 0, 0, new Uint8Array(4))), /GOAWAY of length 4/],
    ['WINDOW_UPDATE of 3 bytes', concat(start, frame(T.WINDOW_UPDATE, 0, 0, new Uint8Array(3))), /WINDOW_UPDATE of length 3/],
    ['a frame inside a header block', concat(start, frame(T.HEADERS, 0, 1, hex('82')), frame(T.PING, 0, 0, new Uint8Array(8))), /inside the header block/],
    ['CONTINUATION of another stream', concat(start, frame(T.HEADERS, 0, 1, hex('82')), frame(T.CONTINUATION, F.END_HEADERS, 3, hex('82'))), /inside the header block/],
    ['CONTINUATION alone', concat(start, frame(T.CONTINUATION, F.END_HEADERS, 1, hex('82'))), /without a header block/],
    ['padding longer than the payload', concat(start, open(e(), 1, 'Get'), frame(T.DATA, F.PADDED, 1, hex('05 0000'))), /padding longer/],
    ['HEADERS too short for PRIORITY', concat(start, frame(T.HEADERS, F.PRIORITY | F.END_HEADERS, 1, hex('0000'))), /too short/],
    ['an HPACK error', concat(start, frame(T.HEADERS, F.END_HEADERS, 1, hex('80'))), /HPACK: index 0/],
  ];
  for (const [name, stream, reason] of faults) {
    it(`loses sync for good on ${name}`, () => {
      const flow = parser.openFlow();
      expect(flow.parseRequest(stream)).toBeNull();
      expect(flow.stats.lostReason).toMatch(reason);
      expect(flow.parseRequest(concat(start, unary(e(), 1, 'Get', 'GetRequest', { id: Buffer.from('k') })))).toBeNull();
      expect(flow.resync(start)).toBe(-1);
    });
  }

  it('loses sync on a header block over maxHeaderBlockBytes', () => {
    const flow = parserWith({ maxHeaderBlockBytes: 64 }).openFlow();
    const block = new TestHpackEncoder().encode(grpcRequestHeaders('/store.Store/Get', [['x-big', 'b'.repeat(100)]]));
    expect(flow.parseRequest(concat(start, frame(T.HEADERS, F.END_HEADERS, 1, block)))).toBeNull();
    expect(flow.stats.lostReason).toMatch(/larger than 64/);
  });

  it('returns the keys found before a fault, without consuming the faulty frame', () => {
    const good = concat(start, unary(e(), 1, 'Get', 'GetRequest', { id: Buffer.from('before') }));
    const flow = parser.openFlow();
    const result = flow.parseRequest(concat(good, data(0, hex('00'))));
    expect(result && show(result.accesses)).toEqual(['READ:before']);
    expect(result?.consumed).toBe(good.length);
    expect(flow.parseRequest(data(0, hex('00')))).toBeNull();
  });

  it('waits on a partial preface, resyncs only at the start of the connection', () => {
    const fresh = parser.openFlow();
    expect(fresh.parseRequest(PREFACE.subarray(0, 10))).toEqual({ accesses: [], consumed: 0 });
    expect(fresh.resync(new Uint8Array(0))).toBe(-1);
    expect(fresh.resync(PREFACE.subarray(0, 5))).toBe(0);
    expect(fresh.resync(start)).toBe(0);
    expect(fresh.stats.lostReason).toBeNull();

    const midStream = parser.openFlow();
    expect(midStream.resync(data(1, hex('00')))).toBe(-1);
    expect(midStream.parseRequest(start)).toBeNull();

    const afterGap = parser.openFlow();
    expect(afterGap.parseRequest(start)).toEqual({ accesses: [], consumed: start.length });
    expect(afterGap.resync(concat(start, start))).toBe(-1);
    expect(afterGap.stats.lostReason).toMatch(/gap/);
    expect(afterGap.parseRequest(start)).toBeNull();
  });
});

describe('configuration', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pd3-grpc-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const proto = STORE_PROTO;
  const withMethod = (path: string, method: unknown): GrpcConfig =>
    ({ protos: [proto], methods: { [path]: method } } as unknown as GrpcConfig);
  const refusal = (config: unknown): string => {
    try {
      grpcParser(config as GrpcConfig);
    } catch (error) {
      expect(error).toBeInstanceOf(GrpcConfigError);
      return (error as Error).message;
    }
    return 'accepted';
  };

  it('accepts the fixture and every key kind', () => {
    expect(Object.keys(storeConfig.methods)).toHaveLength(7);
    expect(storeConfig.protos[0]).toBe(join(FIXTURES, 'store.proto'));
    expect(parser.name).toBe('grpc');
  });

  it('refuses bad methods, ops and key paths, naming the method and field', () => {
    const cases: Array<[string, unknown, RegExp]> = [
      ['/store.Store/Get', { op: 'GET', keys: 'id' }, /methods\["\/store.Store\/Get"\]\.op: "GET" is not one of READ, WRITE, DELETE/],
      ['/store.Store/Nope', { op: 'READ', keys: 'id' }, /methods\["\/store.Store\/Nope"\]: service "store.Store" has no method "Nope" \(methods: Get, /],
      ['/store.Nope/Get', { op: 'READ', keys: 'id' }, /no service "store.Nope"/],
      ['/store.Store/toString', { op: 'READ', keys: 'id' }, /has no method "toString"/],
      ['/store.GetRequest/Get', { op: 'READ', keys: 'id' }, /no service "store.GetRequest"/],
      ['store.Store/Get', { op: 'READ', keys: 'id' }, /gRPC path/],
      ['/store.Store/Get', { op: 'READ', keys: 'nope' }, /methods\["\/store.Store\/Get"\]\.keys: key path "nope": store.GetRequest has no field "nope" \(fields: id\)/],
      ['/store.Store/Get', { op: 'READ', keys: 'id[]' }, /field "id" is not repeated; drop the "\[\]"/],
      ['/store.Store/MultiGet', { op: 'READ', keys: 'ids' }, /field "ids" is repeated; write "ids\[\]"/],
      ['/store.Store/BatchPut', { op: 'WRITE', keys: 'items.key' }, /field "items" is repeated/],
      ['/store.Store/BatchPut', { op: 'WRITE', keys: 'items[].nope' }, /store.Item has no field "nope"/],
      ['/store.Store/Tag', { op: 'READ', keys: 'labels' }, /"labels" is a map/],
      ['/store.Store/Tag', { op: 'READ', keys: 'flag' }, /"flag" is a bool; a key must be bytes, a string or an integer/],
      ['/store.Store/Tag', { op: 'READ', keys: 'score' }, /"score" is a double/],
      ['/store.Store/Tag', { op: 'READ', keys: 'item' }, /"item" is a Item/],
      ['/store.Store/Tag', { op: 'READ', keys: 'kind' }, /"kind" is a Kind/],
      ['/store.Store/Tag', { op: 'READ', keys: 'flag.x' }, /"flag" is a bool, not a message/],
      ['/store.Store/Get', { op: 'READ', keys: 'constructor' }, /has no field "constructor"/],
      ['/store.Store/Get', { op: 'READ', keys: 'id.' }, /"id" is a bytes, not a message/],
      ['/store.Store/Lookup', { op: 'READ', keys: 'user..id' }, /store.User has no field ""/],
      ['/store.Store/Get', { op: 'READ', keys: [] }, /keys: a field path/],
      ['/store.Store/Get', { op: 'READ' }, /keys: a field path/],
      ['/store.Store/Get', { op: 'READ', keys: 'id', extra: 1 }, /unknown setting "extra"/],
    ];
    for (const [path, method, message] of cases) expect(refusal(withMethod(path, method))).toMatch(message);
  });

  it('refuses bad files, shapes and limits', () => {
    const ok = { op: 'READ', keys: 'id' };
    expect(refusal({ protos: [], methods: { '/store.Store/Get': ok } })).toMatch(/"protos" must be a non-empty array/);
    expect(refusal({ protos: [join(dir, 'missing.proto')], methods: { '/store.Store/Get': ok } })).toMatch(/cannot load .*missing.proto/);
    expect(refusal({ protos: [proto], methods: {} })).toMatch(/lists no method/);
    expect(refusal({ protos: [proto], methods: [] })).toMatch(/"methods" must be an object/);
    expect(refusal({ protos: [proto], method: {} })).toMatch(/unknown setting "method"/);
    expect(refusal({ protos: [proto], methods: { '/store.Store/Get': ok }, limits: { maxStreams: 0 } })).toMatch(/limits\.maxStreams: 0 is not a positive integer/);
    expect(refusal({ protos: [proto], methods: { '/store.Store/Get': ok }, limits: { maxStream: 5 } })).toMatch(/unknown setting "maxStream"/);
    const broken = join(dir, 'broken.proto');
    writeFileSync(broken, 'syntax = "proto3"; message X { strin id = 1; }');
    expect(refusal({ protos: [broken], methods: { '/X/Y': ok } })).toMatch(/grpc config: protos: /);
  });

  it('loadGrpcConfig names the file, resolves protos next to it, and refuses unreadable or non-JSON files', () => {
    expect(() => loadGrpcConfig(join(dir, 'absent.json'))).toThrow(/absent.json: cannot read/);
    const notJson = join(dir, 'bad.json');
    writeFileSync(notJson, '{ protos: ');
    expect(() => loadGrpcConfig(notJson)).toThrow(/bad.json: not JSON/);
    const wrong = join(dir, 'wrong.json');
    writeFileSync(wrong, JSON.stringify({ protos: [proto], methods: { '/store.Store/Get': { op: 'READ', keys: 'idd' } } }));
    expect(() => loadGrpcConfig(wrong)).toThrow(/^grpc config .*wrong.json: methods\["\/store.Store\/Get"\]\.keys: key path "idd"/);
    const relative = join(FIXTURES, 'store-config.json');
    expect(loadGrpcConfig(relative).protos).toEqual([proto]);
  });
});

describe('parseRecord (pd3/record.h records)', () => {
  function record(key: Uint8Array, value: Uint8Array): Uint8Array {
    const header = new Uint8Array(C.SIZEOF_KV_HEADER);
    const view = new DataView(header.buffer);
    view.setUint32(C.KV_KEY_LEN, key.length, true);
    view.setUint32(C.KV_VALUE_LEN, value.length, true);
    return concat(header, key, value);
  }

  it('lists each key with where its value is', () => {
    const page = concat(record(bytes('k1'), bytes('value-1')), record(bytes('key-two'), new Uint8Array(0)), new Uint8Array(16));
    const keys = parser.parseRecord(page);
    expect(keys.map((k) => Buffer.from(k.key).toString())).toEqual(['k1', 'key-two']);
    expect(keys[0]).toMatchObject({ offset: C.SIZEOF_KV_HEADER + 2, length: 7 });
    expect(Buffer.from(page.subarray(keys[0]!.offset, keys[0]!.offset + keys[0]!.length)).toString()).toBe('value-1');
    expect(keys[1]).toMatchObject({ offset: 2 * C.SIZEOF_KV_HEADER + 2 + 7 + 7, length: 0 });
  });

  it('stops at a truncated record or an over-long key, and takes any bytes', () => {
    const whole = concat(record(bytes('a'), bytes('1')), record(bytes('b'), bytes('22')));
    expect(parser.parseRecord(whole.subarray(0, whole.length - 1))).toHaveLength(1);
    const tooLong = new Uint8Array(C.SIZEOF_KV_HEADER + 8);
    new DataView(tooLong.buffer).setUint32(C.KV_KEY_LEN, C.MAX_KEY_LEN + 1, true);
    expect(parser.parseRecord(tooLong)).toEqual([]);
    const random = prng(5);
    for (let i = 0; i < 2000; i++) {
      const junk = Uint8Array.from({ length: Math.floor(random() * 64) }, () => (random() < 0.5 ? 0 : Math.floor(random() * 256)));
      for (const k of parser.parseRecord(junk)) expect(k.offset + k.length).toBeLessThanOrEqual(junk.length);
    }
  });
});
