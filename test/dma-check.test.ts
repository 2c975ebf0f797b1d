// dma-check.test.ts — no agent code reaches host memory except through HostDma
// (scripts/check-dma.mjs over native/dpu), and the checker catches each kind of breach.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain .mjs script without type declarations
import { breachesIn, checkDma } from '../scripts/check-dma.mjs';

const breaches = breachesIn as (text: string) => string[];
const check = checkDma as (dir: string) => string[];
const root = fileURLToPath(new URL('..', import.meta.url));

describe('the agent and host memory', () => {
  it('native/dpu reaches the segment only through HostDma', () => {
    expect(check(join(root, 'native', 'dpu'))).toEqual([]);
  });

  it('catches each kind of breach, and not comments or the backend', () => {
    expect(breaches('#include "common/lz_view.hpp"\n')).toEqual(['1: includes common/lz_view.hpp']);
    expect(breaches('#include "common/segment_rings.hpp"')).toEqual(['1: includes common/segment_rings.hpp']);
    expect(breaches('#include "host/lz_consumer.hpp"')).toEqual(['1: includes host/lz_consumer.hpp']);
    expect(breaches('void f(pd3_control* c);')).toEqual(['1: a pointer or reference to pd3_control']);
    expect(breaches('int x;\nconst pd3_lz_desc & d = z;')).toEqual(['2: a pointer or reference to pd3_lz_desc']);
    expect(breaches('auto n = session.control()->req_head;')).toEqual(['1: dereferences a segment pointer']);
    expect(breaches('LzView zone(c);')).toEqual(['1: uses LzView (a segment-pointer API)']);
    expect(breaches('// pd3_control* in a comment\n/* LzView */ int y;')).toEqual([]);
    expect(breaches('#include "dpu/host_dma.hpp"\npd3_control copy{};')).toEqual([]);
    const dir = mkdtempSync(join(tmpdir(), 'pd3-dma-check-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'shm_dma.cpp'), 'pd3_control* allowed_here;');
    writeFileSync(join(dir, 'engine.cpp'), 'ok();\nuint8_t* p = seg.control()->pad;');
    expect(check(dir)).toEqual(['engine.cpp:2: dereferences a segment pointer']);
  });
});

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
