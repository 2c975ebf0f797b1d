// grpc-streams.ts — the open streams of configured methods on one connection: their message
// reassembly under shared limits, and the keys of each request message as it completes.
import type { Access } from '../contract.js';
import { extractKeys } from './grpc-keys.js';
import { GrpcMessageAssembler, type MessageBudget, type SkipReason } from './grpc-messages.js';
import type { CompiledGrpcConfig, CompiledMethod } from './grpc-schema.js';

/** Counters of a connection's request messages. */
export interface GrpcMessageStats {
  /** Request messages of configured methods decoded. */
  messages: number;
  /** Messages of configured methods protobufjs could not decode. */
  undecodable: number;
  /** Messages skipped undecoded, by reason (grpc-messages.ts). */
  compressed: number;
  badFlag: number;
  oversize: number;
  overBudget: number;
  /** Messages cut short by END_STREAM, RST_STREAM or a forgotten stream. */
  truncated: number;
  /** Streams forgotten because maxStreams were tracked already. */
  evictedStreams: number;
}

/** A stream of a configured method whose request messages are still arriving. */
interface TrackedStream {
  method: CompiledMethod;
  messages: GrpcMessageAssembler;
}

/** The tracked streams of one connection. Streams of unconfigured methods are never tracked, so
 *  their DATA costs nothing. */
export class GrpcStreams {
  private readonly streams = new Map<number, TrackedStream>();
  private readonly budget: MessageBudget;
  /** Accesses of messages completed since the last drain. */
  private found: Access[] = [];

  constructor(
    private readonly config: CompiledGrpcConfig,
    private readonly maxKeyBytes: number,
    private readonly stats: GrpcMessageStats,
  ) {
    this.budget = { held: 0, limit: config.limits.maxBufferedBytes };
  }

  /** Starts tracking `streamId`, whose requests call `method`. */
  open(streamId: number, method: CompiledMethod): void {
    if (this.streams.size >= this.config.limits.maxStreams) {
      // The server may have reset a stream without the client saying so: forget the oldest rather
      // than stop tracking new ones.
      const oldest = this.streams.keys().next().value;
      if (oldest !== undefined) this.close(oldest);
      this.stats.evictedStreams++;
    }
    const messages = new GrpcMessageAssembler(this.config.limits.maxMessageBytes, this.budget, {
      message: (bytes) => this.decode(method, bytes),
      skipped: (reason) => this.countSkip(reason),
    });
    this.streams.set(streamId, { method, messages });
  }

  /** The stream ended (END_STREAM, RST_STREAM): a partial message is dropped. */
  close(streamId: number): void {
    const stream = this.streams.get(streamId);
    if (!stream) return;
    if (stream.messages.close()) this.stats.truncated++;
    this.streams.delete(streamId);
  }

  /** DATA bytes[start, end) of `streamId`; ignored unless the stream is tracked. */
  data(streamId: number, bytes: Uint8Array, start: number, end: number): void {
    this.streams.get(streamId)?.messages.push(bytes, start, end);
  }

  /** The accesses found since the last call, in the order their messages completed. */
  drain(): Access[] {
    const found = this.found;
    this.found = [];
    return found;
  }

  private decode(method: CompiledMethod, bytes: Uint8Array): void {
    let message: object;
    try {
      message = method.requestType.decode(bytes);
    } catch {
      // Not a valid message of the request type: its keys are unknown, and guessing is not allowed.
      this.stats.undecodable++;
      return;
    }
    this.stats.messages++;
    const keys: Uint8Array[] = [];
    for (const path of method.keyPaths) extractKeys(message, path, this.maxKeyBytes, keys);
    for (const key of keys) this.found.push({ key, op: method.op });
  }

  private countSkip(reason: SkipReason): void {
    if (reason === 'compressed') this.stats.compressed++;
    else if (reason === 'bad-flag') this.stats.badFlag++;
    else if (reason === 'oversize') this.stats.oversize++;
    else this.stats.overBudget++;
  }
}
