#!/usr/bin/env node
// bench.mjs — `npm run bench -- NAME [--quick] [...]`: runs bench/NAME (compiled to dist/bench).
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const [name, ...args] = process.argv.slice(2);
const dir = join(root, 'dist', 'bench');
const available = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.js')).map((f) => f.slice(0, -3)) : [];
if (!name || name === '--help' || !available.includes(name)) {
  console.error(`usage: npm run bench -- NAME [--quick]\nbenchmarks: ${available.join(', ') || '(none built: run npm run build)'}`);
  process.exit(name && name !== '--help' ? 2 : 0);
}
process.argv = [process.argv[0], join(dir, `${name}.js`), ...args];
await import(pathToFileURL(join(dir, `${name}.js`)).href);
