// grpc-fuzz.test.ts — seeded random and mutation fuzzing of the gRPC flow parser: real recorded
// client streams and synthetic ones, mutated, spliced and fed in random chunks. The parser must never
// throw, consume only what it was given, name only keys of configured methods, and stay fast.
// PD3_FUZZ_ITERS sets the number of inputs (default below). Mutations are seeded; the recorded seed
// streams differ between runs only in the server port and the timing of control frames, so a failing
// input is saved to a file named in the failure.
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { constants as C } from '../dist/host/index.js';
import { grpcParser, type Access, type GrpcFlowParser, type GrpcParser } from '../dist/parsers/index.js';
import { F, T, TestHpackEncoder, concat, connectionStart, frame, grpcMessage, grpcRequestHeaders, hex, prng } from './fixtures/grpc/h2-kit.js';
import { STORE_PROTO, recordSession, scriptCalls } from './fixtures/grpc/grpc-live.js';

const ITERATIONS = Number(process.env.PD3_FUZZ_ITERS ?? 50_000);
/** Far above the few microseconds an input takes; only a hang or a blow-up in work would reach it. */
const SLOWEST_INPUT_MS = 250;

/** Only READ and DELETE methods are configured: any WRITE access would come from a method that is not. */
const CONFIGURED_OPS = new Set(['READ', 'DELETE']);
let parser: GrpcParser;
let seeds: Uint8Array[];

beforeAll(async () => {
  parser = grpcParser({
    protos: [STORE_PROTO],
    methods: {
      '/store.Store/Get': { op: 'READ', keys: 'id' },
      '/store.Store/MultiGet': { op: 'READ', keys: 'ids[]' },
      '/store.Store/Delete': { op: 'DELETE', keys: 'id' },
      '/store.Store/Lookup': { op: 'READ', keys: ['user.id', 'tag'] },
    },
  });
  // Short real sessions (mutating a long one mostly exercises its unchanged tail).
  const recorded: Uint8Array[] = [];
  for (const seed of [21, 22, 23, 24]) {
    const calls = scriptCalls(12, prng(seed)).filter((c) => c.method !== 'Put');
    recorded.push(...(await recordSession(calls)));
  }
  seeds = [...recorded, ...syntheticSeeds()];
});

/** Hand-built connections with the framing features a grpc-js client does not use. */
function syntheticSeeds(): Uint8Array[] {
  const e = new TestHpackEncoder(true);
  const block = e.encode(grpcRequestHeaders('/store.Store/MultiGet', [['x-pad', 'p'.repeat(40)]]));
  const get = grpcMessage(hex('0a03 6b6579')); // GetRequest { id: "key" }
  const multi = grpcMessage(hex('0a01 61 0a01 62')); // MultiGetRequest { ids: ["a", "b"] }
  const first = concat(
    connectionStart(),
    frame(T.HEADERS, F.PRIORITY, 1, concat(hex('00000000 0f'), block.subarray(0, 20)), 3),
    frame(T.CONTINUATION, F.END_HEADERS, 1, block.subarray(20)),
    frame(T.DATA, 0, 1, multi.subarray(0, 6), 2),
    frame(T.WINDOW_UPDATE, 0, 1, hex('00001000')),
    frame(T.DATA, F.END_STREAM, 1, multi.subarray(6)),
    frame(T.HEADERS, F.END_HEADERS, 3, e.encode(grpcRequestHeaders('/store.Store/Get'))),
    frame(T.HEADERS, F.END_HEADERS, 5, e.encode(grpcRequestHeaders('/store.Store/Delete'))),
    frame(T.DATA, 0, 3, get.subarray(0, 2)),
    frame(T.DATA, F.END_STREAM, 5, grpcMessage(hex('082a'))),
    frame(T.DATA, F.END_STREAM, 3, get.subarray(2)),
    frame(0x33, 0, 0, hex('0102')),
  );
  const e2 = new TestHpackEncoder();
  e2.resize(256);
  const second = concat(
    connectionStart(),
    frame(T.HEADERS, F.END_HEADERS, 1, e2.encode(grpcRequestHeaders('/store.Store/Get', [['x-a', 'a'.repeat(150)]]))),
    frame(T.DATA, F.END_STREAM, 1, concat(grpcMessage(hex('0a01 78'), true), get)),
    frame(T.HEADERS, F.END_HEADERS, 3, e2.encode(grpcRequestHeaders('/store.Store/Get', [['x-b', 'b'.repeat(150)]]), 'never')),
    frame(T.RST_STREAM, 0, 3, hex('00000008')),
  );
  return [first, second];
}

/** One fuzz input from seed material, deterministic in `random`. */
function makeInput(random: () => number): Uint8Array {
  const pick = (n: number): number => Math.floor(random() * n);
  const roll = pick(20);
  if (roll === 0) return Uint8Array.from({ length: pick(512) }, () => pick(256));
  if (roll === 1) return concat(connectionStart(), Uint8Array.from({ length: pick(512) }, () => pick(256)));
  let input = seeds[pick(seeds.length)]!.slice();
  for (let m = 1 + pick(4); m > 0; m--) input = mutate(input, random);
  return input;
}

const INTERESTING = [0x00, 0x01, 0x04, 0x05, 0x08, 0x09, 0x20, 0x3f, 0x40, 0x7f, 0x80, 0xbe, 0xff];

function mutate(input: Uint8Array, random: () => number): Uint8Array {
  const pick = (n: number): number => Math.floor(random() * n);
  const at = pick(input.length + 1);
  switch (pick(8)) {
    case 0: {
      const out = input.slice();
      if (out.length) out[Math.min(at, out.length - 1)]! ^= 1 << pick(8);
      return out;
    }
    case 1: {
      const out = input.slice();
      if (out.length) out[Math.min(at, out.length - 1)] = INTERESTING[pick(INTERESTING.length)]!;
      return out;
    }
    case 2:
      return concat(input.subarray(0, at), Uint8Array.from({ length: 1 + pick(16) }, () => pick(256)), input.subarray(at));
    case 3:
      return concat(input.subarray(0, at), input.subarray(Math.min(input.length, at + 1 + pick(64))));
    case 4: {
      const from = pick(input.length + 1);
      return concat(input.subarray(0, at), input.subarray(from, from + 1 + pick(256)), input.subarray(at));
    }
    case 5: {
      const other = seeds[pick(seeds.length)]!;
      return concat(input.subarray(0, at), other.subarray(pick(other.length + 1)));
    }
    case 6:
      return input.subarray(0, at);
    default: {
      // A frame-sized length field (24 bits) of interesting size written over three bytes.
      const out = input.slice();
      const size = [0, 1, 5, 8, 16384, 16385, 0xffffff][pick(7)]!;
      for (let i = 0; i < 3 && at + i < out.length; i++) out[at + i] = (size >>> (16 - 8 * i)) & 0xff;
      return out;
    }
  }
}

/** Feeds `input` in random pieces (sometimes with a resync call), checking every result. Returns
 *  the accesses, or a description of the first broken rule. */
function run(input: Uint8Array, random: () => number): { accesses: Access[]; problem: string | null; flow: GrpcFlowParser } {
  const flow = parser.openFlow();
  const accesses: Access[] = [];
  let pending: Uint8Array = new Uint8Array(0);
  for (let at = 0; at < input.length; ) {
    const size = 1 + Math.floor(random() * (random() < 0.5 ? 64 : input.length));
    const chunk = input.subarray(at, at + size);
    at += chunk.length;
    const given = pending.length ? concat(pending, chunk) : chunk;
    if (random() < 0.01) {
      const offset = flow.resync(given);
      if (!Number.isInteger(offset) || offset < -1 || offset >= Math.max(1, given.length)) return { accesses, flow, problem: `resync gave ${offset}` };
    }
    const result = flow.parseRequest(given);
    if (result === null) break;
    if (!Number.isInteger(result.consumed) || result.consumed < 0 || result.consumed > given.length) {
      return { accesses, flow, problem: `consumed ${result.consumed} of ${given.length}` };
    }
    for (const access of result.accesses) {
      if (!CONFIGURED_OPS.has(access.op)) return { accesses, flow, problem: `op ${access.op} of no configured method` };
      if (!(access.key instanceof Uint8Array) || access.key.length < 1 || access.key.length > C.MAX_KEY_LEN) {
        return { accesses, flow, problem: `key of length ${access.key.length}` };
      }
      accesses.push(access);
    }
    pending = given.slice(result.consumed);
  }
  return { accesses, flow, problem: null };
}

/** Writes a failing input where it can be replayed from; returns the path. */
function save(input: Uint8Array, index: number): string {
  const path = join(tmpdir(), `pd3-grpc-fuzz-input-${index}.bin`);
  writeFileSync(path, input);
  return path;
}

/** Where an input ended up, for the summary line: how deep the fuzzing got. */
function outcomeOf(flow: GrpcFlowParser): string {
  const reason = flow.stats.lostReason;
  if (reason === null) return 'in sync';
  if (reason.startsWith('HPACK')) return 'HPACK error';
  if (reason.includes('preface') || reason.includes('gap')) return 'no preface or gap';
  return 'framing error';
}

describe('gRPC parser fuzzing', () => {
  it('unmutated seeds parse in sync', () => {
    for (const seed of seeds) {
      const flow = parser.openFlow();
      expect(flow.parseRequest(seed)).not.toBeNull();
      expect(flow.stats.lostReason).toBeNull();
    }
  });

  it(`${ITERATIONS} mutated and random inputs: no throw, consumed ≤ given, configured ops only, bounded time`, () => {
    let slowest = 0;
    let keys = 0;
    let undecodable = 0;
    const outcomes = new Map<string, number>();
    const started = performance.now();
    for (let i = 0; i < ITERATIONS; i++) {
      const random = prng(0x5eed0000 + i);
      const input = makeInput(random);
      const t0 = performance.now();
      let outcome: ReturnType<typeof run>;
      try {
        outcome = run(input, random);
      } catch (error) {
        throw new Error(`input ${i} (${save(input, i)}) threw: ${(error as Error).stack}`);
      }
      const took = performance.now() - t0;
      slowest = Math.max(slowest, took);
      if (outcome.problem) throw new Error(`input ${i} (${save(input, i)}): ${outcome.problem}`);
      if (took > SLOWEST_INPUT_MS) throw new Error(`input ${i} (${save(input, i)}) took ${took.toFixed(1)} ms`);
      keys += outcome.accesses.length;
      undecodable += outcome.flow.stats.undecodable;
      const where = outcomeOf(outcome.flow);
      outcomes.set(where, (outcomes.get(where) ?? 0) + 1);
    }
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `grpc fuzz: ${ITERATIONS} inputs in ${seconds.toFixed(1)} s (${Math.round(ITERATIONS / seconds)} inputs/s), ` +
        `${keys} keys, ${undecodable} undecodable messages, slowest input ${slowest.toFixed(2)} ms; ` +
        [...outcomes].map(([where, n]) => `${where} ${n}`).join(', '),
    );
    // The inputs must reach key extraction, not all die at the preface.
    expect(keys).toBeGreaterThan(ITERATIONS);
    expect(outcomes.get('in sync') ?? 0).toBeGreaterThan(ITERATIONS / 10);
  });
});
