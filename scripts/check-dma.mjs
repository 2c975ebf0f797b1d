#!/usr/bin/env node
// check-dma.mjs — every access of the agent (native/dpu) to host memory goes through HostDma
// (native/dpu/host_dma.hpp): no agent file but the shared-memory backend's own may include the
// headers that hand out pointers into the segment, or name a pointer or reference to the
// segment's structs. `node scripts/check-dma.mjs [DIR]` prints each breach and exits 1 if any.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The shared-memory backend: the only agent files allowed to touch the mapping. */
export const BACKEND_FILES = ['shm_dma.hpp', 'shm_dma.cpp'];

/** Headers whose API is a pointer into the segment (or that map it). */
const POINTER_HEADERS = ['common/segment.hpp', 'common/segment_rings.hpp', 'common/slot_ring.hpp', 'common/lz_view.hpp',
  'common/doorbell.hpp', 'host/'];

/** What a breach looks like in C++ source (comments are stripped first). */
const PATTERNS = [
  { re: /#\s*include\s*[<"]([^>"]+)[>"]/g, why: (m) => POINTER_HEADERS.some((h) => m[1].startsWith(h)) ? `includes ${m[1]}` : null },
  { re: /\b(pd3_control|pd3_lz_desc|pd3_slot|Segment)\s*(?:const\s*)?[*&]/g, why: (m) => `a pointer or reference to ${m[1]}` },
  { re: /\b(?:control|base)\s*\(\s*\)\s*->/g, why: () => 'dereferences a segment pointer' },
  { re: /\bLzView\b|\bSlotRing\b|\bring_agent\b/g, why: (m) => `uses ${m[0]} (a segment-pointer API)` },
];

function stripComments(src) {
  return src.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' ')).replace(/\/\/[^\n]*/g, '');
}

/** Breaches in one file's text, as "LINE: what". */
export function breachesIn(text) {
  const code = stripComments(text);
  const out = [];
  for (const { re, why } of PATTERNS) {
    for (const m of code.matchAll(re)) {
      const reason = why(m);
      if (reason) out.push(`${code.slice(0, m.index).split('\n').length}: ${reason}`);
    }
  }
  return out;
}

/** Every breach under `dir` (native/dpu), as "FILE:LINE: what". */
export function checkDma(dir) {
  const out = [];
  for (const f of readdirSync(dir).sort()) {
    if (!/\.(hpp|cpp|h)$/.test(f) || BACKEND_FILES.includes(f)) continue;
    for (const b of breachesIn(readFileSync(join(dir, f), 'utf8'))) out.push(`${f}:${b}`);
  }
  return out;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const dir = process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..', 'native', 'dpu');
  const found = checkDma(dir);
  for (const b of found) console.error(`host memory outside HostDma: ${b}`);
  process.exit(found.length ? 1 : 0);
}
