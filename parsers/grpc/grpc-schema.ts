// grpc-schema.ts — binds a GrpcConfig to its .proto files: each configured method's request type and
// compiled key paths, checked once so that parsing never meets an unknown field.
import protobuf from 'protobufjs';
import type { AccessOp } from '../contract.js';
import { GrpcConfigError, checkGrpcConfig, effectiveLimits, type GrpcConfig, type GrpcLimits } from './grpc-config.js';
import { compileKeyPath, type KeyPath } from './grpc-keys.js';

/** One configured method, ready for parsing. */
export interface CompiledMethod {
  readonly path: string;
  readonly op: AccessOp;
  readonly requestType: protobuf.Type;
  readonly keyPaths: readonly KeyPath[];
}

/** A checked configuration: methods by gRPC path, and the limits in effect. */
export interface CompiledGrpcConfig {
  readonly methods: ReadonlyMap<string, CompiledMethod>;
  readonly limits: GrpcLimits;
}

/** Checks `config` (shape, .proto files, methods, key paths) and compiles it. Relative proto paths
 *  are taken from the working directory. Throws GrpcConfigError. */
export function compileGrpcConfig(config: GrpcConfig): CompiledGrpcConfig {
  const checked = checkGrpcConfig(config);
  const root = loadProtos(checked.protos);
  const methods = new Map<string, CompiledMethod>();
  for (const [path, method] of Object.entries(checked.methods)) {
    const where = `grpc config: methods["${path}"]`;
    const requestType = requestTypeOf(root, path, where);
    const paths = Array.isArray(method.keys) ? method.keys : [method.keys];
    const keyPaths = paths.map((text) => compileKeyPath(requestType, text, `${where}.keys`));
    methods.set(path, { path, op: method.op, requestType, keyPaths });
  }
  return { methods, limits: effectiveLimits(checked) };
}

function loadProtos(files: readonly string[]): protobuf.Root {
  const root = new protobuf.Root();
  try {
    // keepCase: key paths use the field names as written in the .proto file.
    root.loadSync(files as string[], { keepCase: true });
  } catch (e) {
    throw new GrpcConfigError(`grpc config: protos: cannot load ${files.join(', ')}: ${(e as Error).message}`);
  }
  try {
    root.resolveAll();
  } catch (e) {
    throw new GrpcConfigError(`grpc config: protos: ${(e as Error).message}`);
  }
  return root;
}

/** The request type of the method at gRPC path "/package.Service/Method". */
function requestTypeOf(root: protobuf.Root, path: string, where: string): protobuf.Type {
  const [, serviceName = '', methodName = ''] = path.split('/');
  let service: protobuf.ReflectionObject | null = null;
  try {
    service = root.lookup(serviceName);
  } catch {
    service = null;
  }
  if (!(service instanceof protobuf.Service)) {
    throw new GrpcConfigError(`${where}: no service "${serviceName}" in the .proto files`);
  }
  const method = Object.prototype.hasOwnProperty.call(service.methods, methodName) ? service.methods[methodName] : undefined;
  if (!method) {
    const known = Object.keys(service.methods).join(', ') || 'none';
    throw new GrpcConfigError(`${where}: service "${serviceName}" has no method "${methodName}" (methods: ${known})`);
  }
  method.resolve();
  const requestType = method.resolvedRequestType;
  if (!requestType) throw new GrpcConfigError(`${where}: request type "${method.requestType}" not found`);
  return requestType;
}
