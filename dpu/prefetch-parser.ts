// prefetch-parser.ts — which parser the agent runs on mirrored requests: a native one (a built-in
// name or a plug-in library, run on the capture thread) or a TS one (the built-in gRPC parser or a
// user's module, run on the JS thread behind the native bridge, native/addon/js_parser_bridge.cpp).
import { extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { grpcParser } from '../parsers/grpc/grpc-parser.js';
import { loadGrpcConfig } from '../parsers/grpc/grpc-config-file.js';
import type { Parser } from '../parsers/index.js';

/** The parser to run: by name inside the native agent, or a TS Parser object. */
export type PrefetchParser = { kind: 'native'; name: string } | { kind: 'ts'; parser: Parser };

const TS_MODULE = new Set(['.js', '.mjs', '.cjs']);

function isParser(v: unknown): v is Parser {
  if (typeof v !== 'object' || v === null) return false;
  const p = v as Record<string, unknown>;
  return typeof p.name === 'string' && p.name !== '' && typeof p.openFlow === 'function';
}

/**
 * Resolves `--prefetch-parser NAME|FILE` (+ `--prefetch-parser-config FILE`):
 * - `grpc`: the built-in TS gRPC parser; the config file (required) maps methods to keys.
 * - a path ending in .js/.mjs/.cjs: a TS/JS module exporting `createParser(configPath?)` (sync or
 *   async) or a default Parser.
 * - anything else (`resp`, `binary`, a .so path): a native parser the agent loads itself.
 * Throws an Error saying what is wrong.
 */
export async function resolvePrefetchParser(name: string, configPath?: string): Promise<PrefetchParser> {
  if (name === 'grpc') {
    if (configPath === undefined) throw new Error('the grpc parser needs --prefetch-parser-config FILE (its method → key mapping)');
    return { kind: 'ts', parser: grpcParser(loadGrpcConfig(configPath)) };
  }
  if (!TS_MODULE.has(extname(name))) {
    if (configPath !== undefined) throw new Error(`--prefetch-parser-config applies to TS parsers only, not to '${name}'`);
    return { kind: 'native', name };
  }
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(resolve(name)).href)) as Record<string, unknown>;
  } catch (e) {
    throw new Error(`parser module ${name}: cannot load: ${(e as Error).message}`);
  }
  let parser: unknown;
  if (typeof mod.createParser === 'function') {
    parser = await (mod.createParser as (config?: string) => unknown)(configPath);
  } else {
    parser = mod.default;
  }
  if (!isParser(parser))
    throw new Error(`parser module ${name} must export createParser(configPath?) or a default Parser ({name, openFlow()})`);
  return { kind: 'ts', parser };
}
