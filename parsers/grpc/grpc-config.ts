// grpc-config.ts — the gRPC parser's configuration: its shape, its defaults and the check of both.
import type { AccessOp } from '../contract.js';

/** How the parser treats one gRPC method. */
export interface GrpcMethodConfig {
  /** What a call does to the keys it names. */
  op: AccessOp;
  /** Where the keys are in the request message: a field path such as "id", "ids[]", "user.id" or
   *  "items[].key" ("[]" marks a repeated field, taken element by element), or several paths. */
  keys: string | string[];
}

/** Memory bounds of one connection's parser. */
export interface GrpcLimits {
  /** Largest request message decoded; larger ones are skipped (default 4 MiB). */
  maxMessageBytes: number;
  /** Streams tracked at once; opening one more forgets the oldest (default 100). */
  maxStreams: number;
  /** Message bytes held across all streams of the connection (default 16 MiB). */
  maxBufferedBytes: number;
  /** Largest header block (HEADERS + CONTINUATION); a larger one loses sync (default 256 KiB). */
  maxHeaderBlockBytes: number;
  /** Largest HPACK dynamic table a size update may ask for; a larger one loses sync (default 64 KiB). */
  maxHeaderTableBytes: number;
}

/** The parser's configuration, as written in its JSON file. */
export interface GrpcConfig {
  /** .proto files declaring the services (paths relative to the config file when loaded from one,
   *  else to the working directory). */
  protos: string[];
  /** gRPC path ("/package.Service/Method") → how to parse its requests. Unlisted methods are ignored. */
  methods: Record<string, GrpcMethodConfig>;
  limits?: Partial<GrpcLimits>;
}

/** A configuration that cannot be used; the message names the setting at fault. */
export class GrpcConfigError extends Error {
  override readonly name = 'GrpcConfigError';
}

/** The limits a configuration without "limits" gets. */
export const DEFAULT_GRPC_LIMITS: Readonly<GrpcLimits> = {
  maxMessageBytes: 4 << 20,
  maxStreams: 100,
  maxBufferedBytes: 16 << 20,
  maxHeaderBlockBytes: 256 << 10,
  maxHeaderTableBytes: 64 << 10,
};

const OPS: readonly AccessOp[] = ['READ', 'WRITE', 'DELETE'];

/** Checks that `value` has the shape of a GrpcConfig (not yet against the .proto files) and returns
 *  it typed. Unknown settings are refused so that a misspelt one is not silently ignored. */
export function checkGrpcConfig(value: unknown): GrpcConfig {
  const top = asObject(value, 'grpc config');
  refuseUnknown(top, ['protos', 'methods', 'limits'], 'grpc config');
  const protos = top.protos;
  if (!Array.isArray(protos) || protos.length === 0 || !protos.every((p) => typeof p === 'string' && p !== '')) {
    throw new GrpcConfigError('grpc config: "protos" must be a non-empty array of .proto file paths');
  }
  const methodsIn = asObject(top.methods, 'grpc config: "methods"');
  const methods: Record<string, GrpcMethodConfig> = {};
  for (const [path, raw] of Object.entries(methodsIn)) {
    methods[path] = checkMethod(path, raw);
  }
  if (Object.keys(methods).length === 0) throw new GrpcConfigError('grpc config: "methods" lists no method');
  const config: GrpcConfig = { protos: protos as string[], methods };
  if (top.limits !== undefined) config.limits = checkLimits(top.limits);
  return config;
}

/** The limits in effect: the configured ones over the defaults. */
export function effectiveLimits(config: GrpcConfig): GrpcLimits {
  return { ...DEFAULT_GRPC_LIMITS, ...config.limits };
}

function checkMethod(path: string, raw: unknown): GrpcMethodConfig {
  const where = `grpc config: methods["${path}"]`;
  if (!/^\/[^/\s]+\/[^/\s]+$/.test(path)) {
    throw new GrpcConfigError(`${where}: a method is named by its gRPC path, "/package.Service/Method"`);
  }
  const method = asObject(raw, where);
  refuseUnknown(method, ['op', 'keys'], where);
  const op = method.op;
  if (typeof op !== 'string' || !(OPS as readonly string[]).includes(op)) {
    throw new GrpcConfigError(`${where}.op: ${JSON.stringify(op)} is not one of ${OPS.join(', ')}`);
  }
  const keys = method.keys;
  const keyList = Array.isArray(keys) ? keys : [keys];
  if (keyList.length === 0 || !keyList.every((k) => typeof k === 'string' && k !== '')) {
    throw new GrpcConfigError(`${where}.keys: a field path ("id", "ids[]", "user.id") or a non-empty array of them`);
  }
  return { op: op as AccessOp, keys: keys as string | string[] };
}

function checkLimits(raw: unknown): Partial<GrpcLimits> {
  const limits = asObject(raw, 'grpc config: "limits"');
  refuseUnknown(limits, Object.keys(DEFAULT_GRPC_LIMITS), 'grpc config: "limits"');
  for (const [name, value] of Object.entries(limits)) {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
      throw new GrpcConfigError(`grpc config: limits.${name}: ${JSON.stringify(value)} is not a positive integer`);
    }
  }
  return limits as Partial<GrpcLimits>;
}

function asObject(value: unknown, where: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new GrpcConfigError(`${where} must be an object`);
  }
  return value as Record<string, unknown>;
}

function refuseUnknown(object: Record<string, unknown>, known: readonly string[], where: string): void {
  for (const name of Object.keys(object)) {
    if (!known.includes(name)) throw new GrpcConfigError(`${where}: unknown setting "${name}" (known: ${known.join(', ')})`);
  }
}
