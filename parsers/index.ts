// index.ts — pd3/parsers: the parser plug-in contract (contract.ts, the TS mirror of
// native/include/pd3/parser.h) and the built-in parsers: RESP and binary (native), gRPC (TS).

export type { AccessOp, Access, ParsedRequests, RecordKey, FlowParser, Parser } from './contract.js';

// gRPC over h2c (parsers/grpc, docs/grpc-parser.md).
export { grpcParser } from './grpc/grpc-parser.js';
export type { GrpcParser } from './grpc/grpc-parser.js';
export { GrpcFlowParser } from './grpc/grpc-flow.js';
export type { GrpcFlowStats } from './grpc/grpc-flow.js';
export { loadGrpcConfig } from './grpc/grpc-config-file.js';
export { GrpcConfigError, DEFAULT_GRPC_LIMITS } from './grpc/grpc-config.js';
export type { GrpcConfig, GrpcMethodConfig, GrpcLimits } from './grpc/grpc-config.js';

// Native parsers: the built-in RESP and binary parsers, and user parser libraries (docs/parsers.md).
export { resp } from './resp.js';
export { binary } from './binary.js';
export { loadParser, NativeParser, NativeFlowParser, parserConstants } from './native-parser.js';
export type { ParserConstants, NativeParserHandle, NativeFlowHandle } from './native.js';
