// grpc-clients.test.ts — the gRPC parser on what a real @grpc/grpc-js client sends: unary and
// client-streaming calls with varied metadata, recorded by a proxy and parsed in random chunks.
import { beforeAll, describe, expect, it } from 'vitest';
import { HpackDecoder } from '../dist/parsers/grpc/hpack.js';
import { grpcParser, loadGrpcConfig, type GrpcParser } from '../dist/parsers/index.js';
import { T, feed, prng, show } from './fixtures/grpc/h2-kit.js';
import { STORE_CONFIG, recordSession, scriptCalls, type ScriptedCall } from './fixtures/grpc/grpc-live.js';

let parser: GrpcParser;
let calls: ScriptedCall[];
let recorded: Uint8Array[];

beforeAll(async () => {
  parser = grpcParser(loadGrpcConfig(STORE_CONFIG));
  calls = scriptCalls(400, prng(7));
  recorded = await recordSession(calls);
});

describe('a real grpc-js client through a recording proxy', () => {
  it('uses one connection whose HPACK dynamic table fills and evicts', () => {
    expect(recorded).toHaveLength(1);
    expect(calls.filter((c) => c.method === 'PutStream').length).toBeGreaterThan(10);
    expect(calls.filter((c) => c.method === 'Stats').length).toBeGreaterThan(10);
    // Decode every header block on its own to see what the client's encoder did to the table.
    const stream = recorded[0]!;
    const decoder = new HpackDecoder();
    let blocks = 0;
    let fullest = 0;
    for (let at = 24; at + 9 <= stream.length; ) {
      const length = stream[at]! * 65536 + stream[at + 1]! * 256 + stream[at + 2]!;
      if (stream[at + 3] === T.HEADERS) {
        // grpc-js sends small header blocks whole and unpadded.
        expect(stream[at + 4]! & 0x2c).toBe(0x04);
        const result = decoder.decode(stream.subarray(at + 9, at + 9 + length));
        expect(result.ok).toBe(true);
        blocks++;
        fullest = Math.max(fullest, decoder.tableBytes);
      }
      at += 9 + length;
    }
    expect(blocks).toBe(calls.length);
    expect(fullest).toBeGreaterThan(3500);
    const names = decoder.tableEntries().map(([name, value]) => `${name}=${value}`);
    expect(names).toContain(`x-request-id=req-${calls.length - 1}`);
    expect(names).not.toContain('x-request-id=req-0');
  });

  it('parsed whole: exactly the expected accesses, in call order', () => {
    const flow = parser.openFlow();
    const result = feed(flow, recorded[0]!);
    expect(result.synced).toBe(true);
    expect(show(result.accesses)).toEqual(calls.flatMap((c) => c.expected));
    expect(flow.stats.lostReason).toBeNull();
    expect(flow.stats.messages).toBe(calls.filter((c) => c.method !== 'Stats').reduce((n, c) => n + c.requests.length, 0));
    expect(flow.stats.streams).toBe(calls.length);
    expect(flow.stats.undecodable + flow.stats.truncated + flow.stats.compressed).toBe(0);
  });

  it('parsed in random chunks (1 byte to 64 KiB): the same accesses', () => {
    const expected = calls.flatMap((c) => c.expected);
    for (const seed of [1, 2, 3, 4]) {
      const random = prng(seed);
      const sizes = [() => 1 + Math.floor(random() * 16), () => 1 + Math.floor(random() * 700), () => 1 + Math.floor(random() * 65536)];
      const result = feed(parser.openFlow(), recorded[0]!, sizes[seed % sizes.length]!);
      expect(result.synced).toBe(true);
      expect(show(result.accesses)).toEqual(expected);
      expect(result.consumed).toBeLessThanOrEqual(recorded[0]!.length);
    }
  });
});

describe('a grpc-js client that compresses its messages', () => {
  let compressedCalls: ScriptedCall[];
  let compressedStream: Uint8Array;

  beforeAll(async () => {
    compressedCalls = scriptCalls(40, prng(11));
    // grpc.default_compression_algorithm 2 = gzip: every message goes out with the compressed flag.
    const connections = await recordSession(compressedCalls, { 'grpc.default_compression_algorithm': 2 });
    expect(connections).toHaveLength(1);
    compressedStream = connections[0]!;
  });

  it('skips compressed messages: no accesses, counted, flow stays in sync', () => {
    const flow = parser.openFlow();
    const result = feed(flow, compressedStream, () => 1000);
    expect(result.synced).toBe(true);
    expect(result.accesses).toEqual([]);
    const configuredMessages = compressedCalls.filter((c) => c.method !== 'Stats').reduce((n, c) => n + c.requests.length, 0);
    expect(flow.stats.compressed).toBe(configuredMessages);
    expect(flow.stats.lostReason).toBeNull();
  });
});
