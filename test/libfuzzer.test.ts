// libfuzzer.test.ts — the coverage-guided fuzzers of test/fuzz (RESP and binary parsers, packet
// decoder, transport frames, request-ring records, pd3-loadgen's RESP reply parser) built with
// clang, libFuzzer and AddressSanitizer in a temporary directory and run for a bounded number of
// inputs each. The seeded copies of the same targets run in pd3_native_tests on every machine; this
// adds coverage guidance where clang is installed (Debian: clang, and libclang-rt-14-dev for the
// fuzzer runtime). PD3_LIBFUZZER_RUNS sets the inputs per target (default 20,000).
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findOnPath, optionalProgram, reportSkip } from './optional-program.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const FUZZERS = ['resp_fuzzer', 'binary_fuzzer', 'packet_fuzzer', 'transport_fuzzer', 'request_ring_fuzzer', 'loadgen_reply_fuzzer'];
const RUNS = Number(process.env.PD3_LIBFUZZER_RUNS ?? 20_000);

const clangxx = optionalProgram({ name: 'clang++', debianPackage: 'clang', needs: 'the libFuzzer targets' });
const clang = clangxx === null ? null : findOnPath('clang');

/** Whether clang can link a libFuzzer program here (the runtime is a package of its own). */
function fuzzerRuntimeLinks(dir: string): boolean {
  const src = join(dir, 'probe.cpp');
  writeFileSync(src, 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n');
  const r = spawnSync(clangxx!, ['-fsanitize=fuzzer,address', src, '-o', join(dir, 'probe')], { encoding: 'utf8' });
  return r.status === 0;
}

const exec = promisify(execFile);
/** Runs a program to completion; rejects with its output when it exits non-zero. */
async function run(file: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ stdout: string; stderr: string }> {
  try {
    return await exec(file, args, { env, encoding: 'utf8', maxBuffer: 64 << 20, timeout: 600_000 });
  } catch (e) {
    const err = e as Error & { stdout?: string; stderr?: string };
    throw new Error(`${file} ${args.join(' ')} failed: ${err.message}\n${(err.stderr ?? '').slice(-4000)}`);
  }
}

const scratch = clangxx === null ? null : mkdtempSync(join(tmpdir(), 'pd3-libfuzzer-'));
let runtime = false;
if (scratch !== null) {
  runtime = fuzzerRuntimeLinks(scratch);
  if (!runtime) {
    // clang is there, its fuzzer runtime is not: the same one-line skip, naming that package.
    reportSkip("skipped: the libFuzzer targets (clang's fuzzer runtime is not installed; Debian package libclang-rt-14-dev)");
  }
}

describe.skipIf(scratch === null || !runtime)('libFuzzer targets (clang, AddressSanitizer)', () => {
  const build = join(scratch ?? tmpdir(), 'build');
  // Asynchronously, so the test worker keeps answering vitest while clang compiles.
  beforeAll(async () => {
    mkdirSync(build, { recursive: true });
    const env = { ...process.env, CC: clang ?? 'clang', CXX: clangxx! };
    await run('cmake', ['-S', root, '-B', build, '-G', 'Unix Makefiles', '-DCMAKE_BUILD_TYPE=RelWithDebInfo',
      '-DPD3_BUILD_FUZZERS=ON', '-DPD3_SANITIZE=address'], env);
    await run('cmake', ['--build', build, '-j', '2', '--target', ...FUZZERS.map((f) => `pd3_${f}`)], env);
  }, 600_000);
  afterAll(() => {
    if (scratch !== null) rmSync(scratch, { recursive: true, force: true });
  });

  for (const fuzzer of FUZZERS) {
    it(`${fuzzer}: up to ${RUNS} inputs (10 s at most), no crash, leak or failed check`, async () => {
      const corpus = join(build, `corpus-${fuzzer}`);
      mkdirSync(corpus, { recursive: true });
      // A crash, a sanitizer report or a failed check exits non-zero, and run() rejects with its output.
      const { stderr } = await run(join(build, `pd3_${fuzzer}`), [`-runs=${RUNS}`, '-max_len=4200', '-seed=1', '-max_total_time=10', corpus]);
      const done = /Done (\d+) runs/.exec(stderr);
      expect(done, stderr.slice(-2000)).not.toBeNull();
      expect(Number(done![1])).toBeGreaterThan(100);
      // Coverage guidance worked: the inputs kept reached more code than the first one did.
      const cov = [...stderr.matchAll(/cov: (\d+)/g)].map((m) => Number(m[1]));
      expect(cov.length).toBeGreaterThan(1);
      expect(cov[cov.length - 1]!).toBeGreaterThan(cov[0]!);
    }, 120_000);
  }
});
