// layering.test.ts — the parts ship apart: the import graph of the compiled package keeps every
// layer to what it may import (scripts/check-layers.mjs, docs/packaging.md) with no import cycle;
// `import('pd3/host')` loads the host library's addon and JS and nothing else; the host addon
// holds no agent, memory-server or parser code. The checker itself is shown to catch each kind of
// breach on a small made-up package.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain .mjs script without type declarations
import { checkLayers, closureOf } from '../scripts/check-layers.mjs';

interface LayerReport {
  files: string[];
  edges: Map<string, string[]>;
  violations: string[];
  cycles: string[][];
}
const check = checkLayers as (dist: string, o?: { selfName?: string; exportsMap?: Record<string, unknown> }) => LayerReport;
const closure = closureOf as (edges: Map<string, string[]>, entry: string) => string[];

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = join(root, 'dist');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; exports: Record<string, unknown> };

describe('the compiled package', () => {
  const report = check(dist, { selfName: pkg.name, exportsMap: pkg.exports });

  it('has no import a layer must not make', () => {
    expect(report.files.length).toBeGreaterThan(100); // it really read the package
    expect(report.violations).toEqual([]);
  });

  it('has no import cycle among its modules', () => {
    expect(report.cycles).toEqual([]);
  });

  it('pd3/host reaches only host/ and common/ modules', () => {
    const reached = closure(report.edges, join('host', 'index.js'));
    expect(reached.length).toBeGreaterThan(3);
    expect(reached.filter((f) => !/^(host|common)\//.test(f))).toEqual([]);
    const bytes = reached.reduce((sum, f) => sum + statSync(join(dist, f)).size, 0);
    const addon = statSync(join(root, 'build', 'Release', 'pd3_host.node')).size;
    console.log(`pd3/host loads ${reached.length} JS modules (${bytes} B) and pd3_host.node (${addon} B)`);
  });
});

/** The .node files a fresh Node process has mapped after importing `specifiers`, by file name. */
function addonsLoadedBy(specifiers: string[]): string[] {
  const script = `${specifiers.map((s) => `await import('${s}');`).join(' ')}
const maps = (await import('node:fs')).readFileSync('/proc/self/maps', 'utf8');
const names = new Set(maps.split('\\n').map((l) => l.trim().split(/\\s+/)[5] ?? '').filter((p) => p.endsWith('.node')).map((p) => p.split('/').pop()));
console.log(JSON.stringify([...names].sort()));`;
  // cwd = the package root, so that 'pd3/...' resolves as the package's own name (as installed).
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8', timeout: 20_000 });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as string[];
}

describe('what a process loads', () => {
  it("import('pd3/host') maps the host addon alone", () => {
    expect(addonsLoadedBy(['pd3/host'])).toEqual(['pd3_host.node']);
  });

  it('each other part maps its own addon (the check above can tell them apart)', () => {
    expect(addonsLoadedBy(['pd3/memserver'])).toEqual(['pd3_memserver.node']);
    expect(addonsLoadedBy(['pd3/parsers'])).toEqual(['pd3_parsers.node']);
    // The agent runs parsers (native ones in its addon, TS ones through pd3/parsers).
    expect(addonsLoadedBy(['pd3/dpu'])).toEqual(['pd3_agent.node', 'pd3_parsers.node']);
    expect(addonsLoadedBy(['pd3/workloads', 'pd3/cli'])).toEqual([]);
  });
});

describe('the native addons', () => {
  /** Demangled names of the functions an addon defines (its symbol table: builds are not stripped). */
  const definedNames = (addon: string): string => {
    const r = spawnSync('nm', ['-C', '--defined-only', join(root, 'build', 'Release', addon)], { encoding: 'utf8', maxBuffer: 64 << 20 });
    expect(r.status, r.stderr).toBe(0);
    return r.stdout;
  };
  const AGENT = ['pd3::TransferEngine::', 'pd3::PacketMirror::', 'pd3::HostView::'];
  const MEMSERVER = ['pd3::MemStore::', 'pd3::KeyIndex::'];
  const PARSERS = ['pd3::ParserFlow::', 'pd3::RespTokenizer::'];

  it('pd3_host.node defines no agent, memory-server or parser code', () => {
    const names = definedNames('pd3_host.node');
    expect(names).toContain('pd3::Segment::'); // the host's own code is there
    expect(names).toContain('pd3::mrrc::RegionCache::'); // and the registration cache of direct mode
    for (const n of [...AGENT, ...MEMSERVER, ...PARSERS]) expect(names, n).not.toContain(n);
  });

  it('each part addon defines its own part (so the search above would find them)', () => {
    const agent = definedNames('pd3_agent.node');
    for (const n of [...AGENT, ...PARSERS]) expect(agent, n).toContain(n);
    const memserver = definedNames('pd3_memserver.node');
    for (const n of MEMSERVER) expect(memserver, n).toContain(n);
    for (const n of AGENT) expect(memserver, n).not.toContain(n);
  });
});

describe('the checker catches', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'pd3-layers-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));
  let n = 0;
  /** A made-up dist/ from {path: source}; returns its violations and cycles. */
  const fake = (files: Record<string, string>): LayerReport => {
    const dir = join(scratch, String(n++));
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
    return check(dir, { selfName: 'pd3', exportsMap: { './host': {}, './dpu': {} } });
  };

  it('a clean package as clean', () => {
    const r = fake({
      'common/addon.js': "import { createRequire } from 'node:module';\n",
      'host/index.js': "import { loadAddon } from '../common/addon.js';\nexport { x } from './x.js';\n",
      'host/x.js': 'export const x = 1;\n',
      'dpu/index.js': "import '../common/addon.js';\n",
      'examples/app.js': "import { Pd3Host } from 'pd3/host';\nimport { Redis } from 'ioredis';\n",
    });
    expect(r.violations).toEqual([]);
    expect(r.cycles).toEqual([]);
  });

  it("host/ importing '../dpu/...'", () => {
    const r = fake({ 'host/index.js': "import { Agent } from '../dpu/agent.js';\n", 'dpu/agent.js': 'export class Agent {}\n' });
    expect(r.violations).toEqual(["host/index.js: layer 'host' must not import 'dpu' (../dpu/agent.js)"]);
  });

  it('the same through a type-only import in a declaration file, a re-export and a dynamic import', () => {
    const r = fake({
      'host/a.d.ts': "import type { Parser } from '../parsers/index.js';\n",
      'host/b.js': "export * from '../memserver/index.js';\n",
      'host/c.js': "const m = await import('../dpu/agent.js');\n",
    });
    expect(r.violations).toHaveLength(3);
    expect(r.violations.join('\n')).toMatch(/host\/a\.d\.ts: layer 'host' must not import 'parsers'/);
  });

  it('an example importing bench/ or PD3 by a relative path, or a subpath the package does not export', () => {
    const r = fake({
      'examples/app.js': "import { leap } from '../bench/baselines/leap.js';\nimport { Pd3Host } from '../host/index.js';\nimport x from 'pd3/bench';\n",
    });
    expect(r.violations).toEqual([
      "examples/app.js: layer 'examples' must not import 'bench' (../bench/baselines/leap.js)",
      "examples/app.js: layer 'examples' must not import 'host' (../host/index.js)",
      'examples/app.js: imports pd3/bench, which the package does not export',
    ]);
  });

  it('the host library importing an npm package, and a folder with no rule', () => {
    const r = fake({ 'host/index.js': "import { Redis } from 'ioredis';\n", 'stray/x.js': '' });
    expect(r.violations).toEqual([
      "host/index.js: layer 'host' must not import the npm package 'ioredis'",
      "stray/x.js: folder 'stray' has no layer rule (add it to LAYER_RULES)",
    ]);
  });

  it('a cycle, also one through several files, but not between declaration files', () => {
    const r = fake({
      'dpu/a.js': "import './b.js';\n",
      'dpu/b.js': "import './c.js';\n",
      'dpu/c.js': "import './a.js';\n",
      'dpu/d.js': "import './a.js';\n",
      'dpu/e.d.ts': "import type { F } from './f.js';\n",
      'dpu/f.d.ts': "import type { E } from './e.js';\n",
    });
    expect(r.violations).toEqual([]);
    expect(r.cycles).toEqual([['dpu/a.js', 'dpu/b.js', 'dpu/c.js']]);
  });
});
