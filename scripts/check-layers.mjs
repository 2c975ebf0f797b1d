#!/usr/bin/env node
// check-layers.mjs — reads the import graph of the compiled package (dist/: every .js and .d.ts) and
// reports each import a layer must not make, and every import cycle among the modules that run. `npm test` runs it
// (test/layering.test.ts); run it by hand with `node scripts/check-layers.mjs [DIST]` (exit 1 on a
// violation). The rules, and why, are in docs/packaging.md.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** Which top-level folders each layer's files may import (its own is always allowed). */
export const LAYER_RULES = {
  common: [],
  workloads: [],
  host: ['common'],
  parsers: ['common'],
  cli: ['common'],
  dpu: ['common', 'cli', 'parsers'],
  memserver: ['common', 'cli', 'parsers'],
  // Examples are written as a user would write them: PD3 only through the package's exports.
  examples: [],
  bench: ['common', 'workloads', 'host', 'parsers', 'cli', 'dpu', 'memserver', 'examples'],
};

/** Which npm packages each layer may import ('*': any; node: builtins are always allowed). */
export const PACKAGE_RULES = {
  // etcd3 only in common/etcd-client.ts and common/pool-members.ts, which the host loads by a
  // dynamic import (TenantSession.open, poolServers) and the deployables statically; cockatiel
  // (etcd3's own fault-handling library) only in common/etcd-client.ts, to set etcd3's policy.
  common: ['etcd3', 'cockatiel'],
  workloads: [],
  // etcd3 only by the dynamic import in TenantSession.open (host/tenant-session.ts): an app that
  // never joins a pool as a tenant never loads it.
  host: ['etcd3'],
  parsers: ['protobufjs'],
  cli: [],
  dpu: ['etcd3'],
  memserver: ['etcd3'],
  examples: ['*'],
  bench: ['*'],
};

const IMPORT_PATTERNS = [
  /^\s*import\s+(?:type\s+)?(?:[\w*{}\s,$]+\s+from\s+)?['"]([^'"]+)['"]/gm, // import x from 'm'; import 'm'
  /^\s*export\s+(?:type\s+)?(?:\*|\{[^}]*\})(?:\s+as\s+\w+)?\s+from\s+['"]([^'"]+)['"]/gm, // export ... from 'm'
  /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g, // import('m') with a literal
  /\brequire\(\s*['"]([^'"]+)['"]\s*\)/g, // require('m')
];

/** Every module specifier a file imports (static, re-export, literal dynamic import, require). */
export function importsOf(text) {
  const found = new Set();
  for (const pattern of IMPORT_PATTERNS) for (const m of text.matchAll(pattern)) found.add(m[1]);
  return [...found];
}

function* walk(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(path);
    else if (/\.(js|mjs|d\.ts)$/.test(entry.name)) yield path;
  }
}

const layerOf = (rel) => rel.split(sep)[0];
const packageName = (spec) => (spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);

/** The import graph of `dist` and what breaks the rules: {files, edges, violations, cycles}.
 *  `selfName` and `exportsMap` are the package's name and its package.json "exports". */
export function checkLayers(dist, { selfName = 'pd3', exportsMap = {} } = {}) {
  const violations = [];
  const edges = new Map(); // .js file (relative to dist) → .js files it imports (relative)
  const files = [...walk(dist)].map((f) => relative(dist, f));
  for (const rel of files) {
    const layer = layerOf(rel);
    const allowed = LAYER_RULES[layer];
    const targets = [];
    if (!rel.endsWith('.d.ts')) edges.set(rel, targets);
    if (allowed === undefined) {
      violations.push(`${rel}: folder '${layer}' has no layer rule (add it to LAYER_RULES)`);
      continue;
    }
    for (const spec of importsOf(readFileSync(join(dist, rel), 'utf8'))) {
      if (spec.startsWith('node:')) continue;
      if (spec.startsWith('.')) {
        const target = relative(dist, resolve(dist, dirname(rel), spec));
        const targetLayer = layerOf(target);
        if (target.startsWith('..')) violations.push(`${rel}: imports ${spec}, outside the package`);
        else if (targetLayer !== layer && !allowed.includes(targetLayer)) {
          violations.push(`${rel}: layer '${layer}' must not import '${targetLayer}' (${spec})`);
        }
        // Cycles are looked for among what runs: .js files. (Two .d.ts files may name each other's
        // types, as two interfaces may; that loads nothing.)
        if (!rel.endsWith('.d.ts')) targets.push(target);
        continue;
      }
      const name = packageName(spec);
      if (name === selfName) {
        const subpath = `.${spec.slice(selfName.length)}`;
        if (!(subpath in exportsMap)) violations.push(`${rel}: imports ${spec}, which the package does not export`);
        else if (layer !== 'examples' && layer !== 'bench') {
          violations.push(`${rel}: layer '${layer}' imports its own package by name (${spec}); use a relative import`);
        }
        continue;
      }
      const packages = PACKAGE_RULES[layer] ?? [];
      if (!packages.includes('*') && !packages.includes(name)) {
        violations.push(`${rel}: layer '${layer}' must not import the npm package '${name}'`);
      }
    }
  }
  return { files, edges, violations, cycles: findCycles(edges) };
}

/** Every strongly connected set of files with more than one member (or a self-import): each is a cycle. */
function findCycles(edges) {
  // Tarjan's algorithm, iterative so deep graphs cannot overflow the stack.
  let next = 0;
  const index = new Map();
  const low = new Map();
  const onStack = new Set();
  const stack = [];
  const cycles = [];
  for (const root of edges.keys()) {
    if (index.has(root)) continue;
    const work = [[root, 0]];
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const [node, i] = frame;
      if (i === 0) {
        index.set(node, next);
        low.set(node, next);
        next += 1;
        stack.push(node);
        onStack.add(node);
      }
      const out = edges.get(node) ?? [];
      if (i < out.length) {
        frame[1] += 1;
        const target = out[i];
        if (!edges.has(target)) continue; // a file outside dist (checked above)
        if (!index.has(target)) work.push([target, 0]);
        else if (onStack.has(target)) low.set(node, Math.min(low.get(node), index.get(target)));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1][0];
        low.set(parent, Math.min(low.get(parent), low.get(node)));
      }
      if (low.get(node) === index.get(node)) {
        const members = [];
        let member;
        do {
          member = stack.pop();
          onStack.delete(member);
          members.push(member);
        } while (member !== node);
        if (members.length > 1 || out.includes(node)) cycles.push(members.sort());
      }
    }
  }
  return cycles;
}

/** Every file reachable from `entry` (relative to dist) through relative imports. */
export function closureOf(edges, entry) {
  const seen = new Set([entry]);
  const todo = [entry];
  while (todo.length > 0) {
    for (const target of edges.get(todo.pop()) ?? []) {
      if (!seen.has(target)) {
        seen.add(target);
        todo.push(target);
      }
    }
  }
  return [...seen].sort();
}

const invokedDirectly = process.argv[1] && pathToFileURL(resolve(process.argv[1])).href === import.meta.url;
if (invokedDirectly) {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..');
  const dist = resolve(process.argv[2] ?? join(root, 'dist'));
  if (!existsSync(dist)) {
    console.error(`check-layers: ${dist} does not exist; run \`npm run build\` first`);
    process.exit(2);
  }
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const { files, violations, cycles } = checkLayers(dist, { selfName: pkg.name, exportsMap: pkg.exports });
  for (const v of violations) console.log(`violation: ${v}`);
  for (const c of cycles) console.log(`cycle: ${c.join(' -> ')}`);
  console.log(`check-layers: ${files.length} files, ${violations.length} violations, ${cycles.length} cycles`);
  process.exit(violations.length + cycles.length === 0 ? 0 : 1);
}
