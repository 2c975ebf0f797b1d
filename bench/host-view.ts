// host-view.ts — `npm run bench -- host-view [--quick]`: Host View lookups (paper §5.2, Fig. 4-5).
// Runs the native side (bench/native/host_view.cpp: PD3 1 and 2 shard threads, absl::flat_hash_set,
// std::unordered_set, batch-size sweep, ablation), then the JS baseline in a child Node process
// with a large heap: a JS Set of BigInt keys (sharded into several Sets when one Set cannot hold
// them: V8 caps a Set at 2^24 entries), looked up by one thread with the same kind of stream (random
// 64-bit keys, half present, half absent). Last line: one JSON object merging both.
//
// Options (passed through to the native binary as well): --quick, --keys N, --lookups N,
// --no-ablation, --ablation. JS only: --js-lookups N.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runEchoing, type JsonObject } from '../examples/harness/echo-run.js';
import { median } from '../examples/harness/median.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const started = Date.now();
const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const QUICK_BUDGET_MS = 60_000;

function option(name: string): number | undefined {
  const i = argv.indexOf(name);
  if (i < 0) return undefined;
  const v = Number(argv[i + 1]);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} needs a positive number`);
  return v;
}

// ---- keys: a 64-bit bijection of an index, in 32-bit arithmetic ---------------------------------
// Four Feistel rounds over (hi, lo) = (0, i); a Feistel network is a permutation whatever its round
// function, so distinct indexes give distinct keys: present keys are indexes [0, N), absent ones
// [N, N + L/2) and can never collide with them.

const ROUND_KEYS = [0x9e3779b9, 0x7f4a7c15, 0xf39cc060, 0x5ced5e7b] as const;

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

// Writes key(index) into words[2 * slot] (low 32 bits) and words[2 * slot + 1] (high).
function writeKey(index: number, words: Uint32Array, slot: number): void {
  let hi = 0;
  let lo = index >>> 0;
  for (const k of ROUND_KEYS) {
    const t = (hi ^ fmix32((lo + k) >>> 0)) >>> 0;
    hi = lo;
    lo = t;
  }
  words[2 * slot] = lo;
  words[2 * slot + 1] = hi;
}

// xorshift32-based uniform index below n (n < 2^32), seeded.
function makeRng(seed: number): (n: number) => number {
  let s = seed >>> 0 || 1;
  const next = (): number => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s;
  };
  return (n: number): number => Math.floor(((next() * 4294967296 + next()) / 18446744073709551616) * n);
}

// ---- the JS child: build the Set(s), time the lookups ------------------------------------------

const SET_LIMIT = 14_000_000; // keys per Set, safely below V8's 2^24 cap

function jsChild(): void {
  const n = option('--keys') ?? 0;
  const l = Math.floor((option('--lookups') ?? 0) / 2) * 2;
  const reps = option('--reps') ?? 3;
  const deadline = option('--build-deadline') ?? Number.POSITIVE_INFINITY; // epoch ms
  if (n <= 0 || l <= 0) throw new Error('--js-child needs --keys and --lookups');

  let shards = 1;
  while (n / shards > SET_LIMIT) shards *= 2;
  const mask = shards - 1;
  const sets: Set<bigint>[] = Array.from({ length: shards }, () => new Set<bigint>());

  // Build in blocks: keys generated into a typed array, then added as BigInts (what a JS caller
  // holding 64-bit keys has). The shard is the key's low bits, read from the 32-bit view.
  const BLOCK = 1 << 20;
  const block = new BigUint64Array(BLOCK);
  const blockWords = new Uint32Array(block.buffer);
  const t0 = performance.now();
  let built = 0;
  while (built < n && Date.now() < deadline) {
    const m = Math.min(BLOCK, n - built);
    for (let j = 0; j < m; ++j) writeKey(built + j, blockWords, j);
    if (shards === 1) {
      const set = sets[0]!;
      for (let j = 0; j < m; ++j) set.add(block[j]!);
    } else {
      for (let j = 0; j < m; ++j) sets[blockWords[2 * j]! & mask]!.add(block[j]!);
    }
    built += m;
  }
  const buildS = (performance.now() - t0) / 1000;
  let size = 0;
  for (const s of sets) size += s.size;
  if (size !== built) throw new Error(`JS Sets hold ${size} keys, ${built} were added`);
  const heapGb = process.memoryUsage().heapUsed / 1e9;
  console.log(
    `JS Set<bigint>: ${built} keys in ${shards} Set(s) built in ${buildS.toFixed(1)} s ` +
      `(${(built / buildS / 1e6).toFixed(2)} M adds/s), heap ${heapGb.toFixed(2)} GB` +
      (built < n ? ` — STOPPED at the time budget: ${built} of ${n} keys` : ''),
  );

  // The stream: half present (uniform over the keys built), half absent, shuffled; fresh BigInt
  // objects, plus each key's low 32 bits for routing.
  const rng = makeRng(0x5eed1234);
  const idx = new Float64Array(l);
  for (let i = 0; i < l / 2; ++i) idx[i] = rng(built);
  for (let i = l / 2; i < l; ++i) idx[i] = n + (i - l / 2);
  for (let i = l - 1; i > 0; --i) {
    const j = rng(i + 1);
    const t = idx[i]!;
    idx[i] = idx[j]!;
    idx[j] = t;
  }
  const streamBig = new BigUint64Array(l);
  const streamWords = new Uint32Array(streamBig.buffer);
  for (let i = 0; i < l; ++i) writeKey(idx[i]!, streamWords, i);
  const stream: bigint[] = new Array<bigint>(l);
  const low = new Uint32Array(l);
  for (let i = 0; i < l; ++i) {
    stream[i] = streamBig[i]!;
    low[i] = streamWords[2 * i]!;
  }

  const pass = (count: number): number => {
    let hits = 0;
    if (shards === 1) {
      const set = sets[0]!;
      for (let i = 0; i < count; ++i) if (set.has(stream[i]!)) hits++;
    } else {
      for (let i = 0; i < count; ++i) if (sets[low[i]! & mask]!.has(stream[i]!)) hits++;
    }
    return hits;
  };
  pass(Math.min(l, 500_000)); // JIT warm-up
  const mops: number[] = [];
  for (let r = 0; r < reps; ++r) {
    const s0 = performance.now();
    const hits = pass(l);
    const s = (performance.now() - s0) / 1000;
    if (hits !== l / 2) throw new Error(`JS Set found ${hits} of ${l} lookups, expected exactly ${l / 2}`);
    mops.push(l / s / 1e6);
  }
  const js = median(mops);
  console.log(
    `JS Set<bigint> 1t: ${js.toFixed(2)} Mops/s (median of ${reps} passes of ${l} lookups: ` +
      `${mops.map((m) => m.toFixed(2)).join(', ')}), hits exactly 50 %`,
  );
  const out: JsonObject = { js_mops_1t: js, js_keys: built, js_lookups: l, js_shards: shards, js_build_s: buildS };
  console.log(JSON.stringify(out));
}

// ---- the parent ----------------------------------------------------------------------------------

const INTEGER_FIELDS = new Set(['keys', 'lookups', 'best_batch', 'js_keys', 'js_lookups', 'js_shards']);
const LEAD_FIELDS = [
  'keys',
  'pd3_mops_1t',
  'pd3_mops_2t',
  'absl_mops_1t',
  'std_mops_1t',
  'js_mops_1t',
  'simd',
  'hugepages',
  'bytes_per_key',
] as const;

// JSON with the fields first and every non-integer number with 3 decimals.
function formatJson(obj: JsonObject): string {
  const keys = [...LEAD_FIELDS, ...Object.keys(obj).filter((k) => !(LEAD_FIELDS as readonly string[]).includes(k))];
  const parts = keys.map((k) => {
    const v = obj[k] ?? null;
    let s: string;
    if (typeof v === 'number') s = !Number.isFinite(v) ? 'null' : INTEGER_FIELDS.has(k) ? String(Math.round(v)) : v.toFixed(3);
    else s = JSON.stringify(v);
    return `${JSON.stringify(k)}:${s}`;
  });
  return `{${parts.join(',')}}`;
}

async function parent(): Promise<void> {
  const nativeArgs: string[] = [];
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i]!;
    if (a === '--js-lookups') {
      ++i;
      continue;
    }
    nativeArgs.push(a);
  }
  const bin = join(root, 'build', 'pd3_bench_host_view');
  const native = await runEchoing(bin, nativeArgs);
  const nativeS = (Date.now() - started) / 1000;

  const keys = Number(native.keys);
  const jsLookups = option('--js-lookups') ?? (quick ? 1_000_000 : 2_000_000);
  const reps = 3;
  // Heap: ~80 bytes per key in V8 (BigInt + Set entry) plus the stream, with room for GC.
  const heapMb = Math.max(4096, Math.ceil((keys * 120 + jsLookups * 80) / 2 ** 20));
  const childArgs = [
    `--max-old-space-size=${heapMb}`,
    fileURLToPath(import.meta.url),
    '--js-child',
    '--keys',
    String(keys),
    '--lookups',
    String(jsLookups),
    '--reps',
    String(reps),
  ];
  if (quick) {
    // Stop building the Set(s) in time to generate the stream and time the lookups (~1-2 Mops/s)
    // before the 60 s budget runs out; anything not built is reported, not extrapolated.
    const lookupReserveMs = 2_500 + ((reps + 1) * jsLookups) / 1_200;
    childArgs.push('--build-deadline', String(started + QUICK_BUDGET_MS - 1_500 - lookupReserveMs));
  }
  console.log('');
  const js = await runEchoing(process.execPath, childArgs);
  const jsS = (Date.now() - started) / 1000 - nativeS;
  const merged: JsonObject = { ...native, ...js };
  if (Number(js.js_keys) < keys)
    console.log(
      `note: the JS baseline holds ${js.js_keys} of ${keys} keys (the Set build did not fit the --quick budget); ` +
        'js_mops_1t is measured on that smaller set',
    );
  const pd3 = Number(native.pd3_mops_1t);
  console.log(`pd3_mops_1t / js_mops_1t = ${(pd3 / Number(js.js_mops_1t)).toFixed(1)}x`);
  console.log(`wall time: native ${nativeS.toFixed(1)} s, JS ${jsS.toFixed(1)} s, total ${(nativeS + jsS).toFixed(1)} s`);
  console.log(formatJson(merged));
}

if (argv.includes('--js-child')) jsChild();
else await parent();
