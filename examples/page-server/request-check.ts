// request-check.ts — the checks a call's decoded message must pass, and the gRPC status of each failure.
import * as grpc from '@grpc/grpc-js';
import { PAGE_SIZE } from './page-content.js';
import type { WireMessage } from './pages-service.js';

/** A request the server refuses: the gRPC status and the reason sent back. */
export class RequestError extends Error {
  override readonly name = 'RequestError';
  constructor(
    readonly code: grpc.status,
    message: string,
  ) {
    super(message);
  }
}

/** The page id of a decoded fixed64 field (a decimal string from toObject); NOT_FOUND when no page
 *  has it. */
export function pageIdOf(value: unknown, pages: number): number {
  const text = typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : value;
  if (typeof text !== 'string' || !/^\d{1,20}$/.test(text)) {
    throw new RequestError(grpc.status.INVALID_ARGUMENT, `page id must be an unsigned 64-bit integer, got ${String(value)}`);
  }
  if (BigInt(text) >= BigInt(pages)) {
    throw new RequestError(grpc.status.NOT_FOUND, `page ${text} does not exist (ids 0..${pages - 1})`);
  }
  return Number(text);
}

/** The ids of a GetPages call, each checked; INVALID_ARGUMENT beyond `max` ids. */
export function pageIdsOf(message: WireMessage, pages: number, max: number): number[] {
  const ids = message.ids;
  if (!Array.isArray(ids)) throw new RequestError(grpc.status.INVALID_ARGUMENT, 'ids must be a list of page ids');
  if (ids.length > max) throw new RequestError(grpc.status.INVALID_ARGUMENT, `at most ${max} ids per GetPages call, got ${ids.length}`);
  return ids.map((id: unknown) => pageIdOf(id, pages));
}

/** The data of a PutPage call: exactly PAGE_SIZE bytes. */
export function pageDataOf(message: WireMessage): Uint8Array {
  const data = message.data;
  if (!(data instanceof Uint8Array)) throw new RequestError(grpc.status.INVALID_ARGUMENT, 'data must be bytes');
  if (data.length !== PAGE_SIZE) {
    throw new RequestError(grpc.status.INVALID_ARGUMENT, `data must be exactly ${PAGE_SIZE} bytes, got ${data.length}`);
  }
  return data;
}
