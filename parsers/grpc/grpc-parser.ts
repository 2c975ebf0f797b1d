// grpc-parser.ts — the built-in gRPC parser (docs/architecture.md §6): requests of an h2c connection in,
// the keys of configured methods out; records in the format of pd3/record.h.
import { constants } from '../native.js';
import type { Parser } from '../contract.js';
import type { GrpcConfig } from './grpc-config.js';
import { GrpcFlowParser } from './grpc-flow.js';
import { compileGrpcConfig } from './grpc-schema.js';
import { parseKvRecords } from './kv-record.js';

/** The gRPC parser plug-in; openFlow() returns a GrpcFlowParser, whose `stats` say what it skipped. */
export interface GrpcParser extends Parser {
  openFlow(): GrpcFlowParser;
}

/** A gRPC parser for `config`, checked against its .proto files first (throws GrpcConfigError).
 *  Relative proto paths are taken from the working directory; loadGrpcConfig makes them absolute. */
export function grpcParser(config: GrpcConfig): GrpcParser {
  const compiled = compileGrpcConfig(config);
  return {
    name: 'grpc',
    openFlow: () => new GrpcFlowParser(compiled, constants.MAX_KEY_LEN),
    parseRecord: parseKvRecords,
  };
}
