// grpc-config-file.ts — loads the gRPC parser's configuration from a JSON file and checks it whole.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { GrpcConfigError, checkGrpcConfig, type GrpcConfig } from './grpc-config.js';
import { compileGrpcConfig } from './grpc-schema.js';

/** Reads, checks and returns the configuration in a JSON file: its shape, its .proto files, and that
 *  every method and key path exists. Proto paths are relative to the file and come back absolute.
 *  Throws GrpcConfigError. */
export function loadGrpcConfig(path: string): GrpcConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new GrpcConfigError(`grpc config ${path}: cannot read: ${(e as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new GrpcConfigError(`grpc config ${path}: not JSON: ${(e as Error).message}`);
  }
  try {
    const config = checkGrpcConfig(parsed);
    const base = dirname(resolve(path));
    const absolute: GrpcConfig = { ...config, protos: config.protos.map((p) => resolve(base, p)) };
    // Checked against the protos now, so that a bad file is reported when it is loaded.
    compileGrpcConfig(absolute);
    return absolute;
  } catch (e) {
    if (!(e instanceof GrpcConfigError)) throw e;
    // Name the file in the message, which otherwise starts "grpc config:".
    throw new GrpcConfigError(e.message.replace(/^grpc config/, `grpc config ${path}`));
  }
}
