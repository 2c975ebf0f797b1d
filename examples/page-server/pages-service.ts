// pages-service.ts — the Pages gRPC service of pages.proto as @grpc/grpc-js method definitions,
// built with protobufjs from the .proto itself (no code generation, no proto-loader), for the
// server and the client alike.
import type * as grpc from '@grpc/grpc-js';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

/** A message as protobufjs's toObject gives it (64-bit integers as decimal strings) or as fromObject
 *  takes it; the handlers and the client check the fields they use. */
export type WireMessage = Record<string, unknown>;

/** The service's methods. */
export type PagesMethod = 'GetPage' | 'GetPages' | 'PutPage' | 'Stats';

/** The service's full name. */
export const PAGES_SERVICE = 'pagestore.Pages';

const here = dirname(fileURLToPath(import.meta.url));

/** pages.proto: beside this module when run from source, else in the checkout's
 *  examples/page-server/ (tsc does not copy it into dist/). */
export const PAGES_PROTO = [join(here, 'pages.proto'), join(here, '..', '..', '..', 'examples', 'page-server', 'pages.proto')]
  .find((p) => existsSync(p)) ?? join(here, 'pages.proto');

/** The agent's gRPC parser config for this service (pages-config.json, next to pages.proto). */
export const PAGES_PARSER_CONFIG = join(dirname(PAGES_PROTO), 'pages-config.json');

let definitions: Record<PagesMethod, grpc.MethodDefinition<WireMessage, WireMessage>> | null = null;

/** The method definitions (loaded from pages.proto on first use). */
export function pagesMethods(): Record<PagesMethod, grpc.MethodDefinition<WireMessage, WireMessage>> {
  if (definitions !== null) return definitions;
  const root = new protobuf.Root().loadSync(PAGES_PROTO, { keepCase: true });
  const service = root.lookupService(PAGES_SERVICE);
  const define = (name: PagesMethod): grpc.MethodDefinition<WireMessage, WireMessage> => {
    const method = service.methods[name];
    if (method === undefined) throw new Error(`${PAGES_PROTO}: ${PAGES_SERVICE} has no method ${name}`);
    method.resolve();
    const request = method.resolvedRequestType!;
    const response = method.resolvedResponseType!;
    return {
      path: `/${PAGES_SERVICE}/${name}`,
      requestStream: false,
      responseStream: false,
      requestSerialize: (value) => encode(request, value),
      requestDeserialize: (bytes) => decode(request, bytes),
      responseSerialize: (value) => encode(response, value),
      responseDeserialize: (bytes) => decode(response, bytes),
      originalName: name,
    };
  };
  definitions = { GetPage: define('GetPage'), GetPages: define('GetPages'), PutPage: define('PutPage'), Stats: define('Stats') };
  return definitions;
}

/** The methods as the service definition grpc.Server.addService takes. */
export function pagesServiceDefinition(): grpc.ServiceDefinition {
  return { ...pagesMethods() };
}

function encode(type: protobuf.Type, value: WireMessage): Buffer {
  const bytes = type.encode(type.fromObject(value)).finish();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

// Throws on bytes that are not a message of `type`; grpc-js answers such a call with an error status.
function decode(type: protobuf.Type, bytes: Buffer): WireMessage {
  return type.toObject(type.decode(bytes), { longs: String, defaults: true, arrays: true }) as WireMessage;
}
