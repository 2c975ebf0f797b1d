// grpc-flow.ts — one h2c connection's client→server byte stream: the preface, frames and HPACK
// header blocks, which open and end the streams whose messages grpc-streams.ts turns into keys.
import type { FlowParser, ParsedRequests } from '../contract.js';
import type { CompiledGrpcConfig } from './grpc-schema.js';
import { GrpcStreams, type GrpcMessageStats } from './grpc-streams.js';
import { HpackDecoder, type HeaderField } from './hpack.js';
import {
  CONNECTION_PREFACE,
  FRAME_HEADER_BYTES,
  FrameFlag,
  FrameType,
  frameHeaderError,
  frameTypeName,
  isPadded,
  payloadPrefixBytes,
  readFrameHeader,
  type FrameHeader,
} from './http2-frames.js';

/** Counters of one flow, for logs and tests. */
export interface GrpcFlowStats extends GrpcMessageStats {
  /** Frames read whole. */
  frames: number;
  /** Streams the client opened (HEADERS on a new stream id), configured or not. */
  streams: number;
  /** Why the flow lost sync, or null while it is in sync. Once set it stays set. */
  lostReason: string | null;
}

/** Where the parser is in the byte stream. */
type Phase = 'preface' | 'frame-header' | 'frame-body' | 'frame-padding';

/** A header block being collected from HEADERS and CONTINUATION frames. */
interface PendingBlock {
  streamId: number;
  endStream: boolean;
  parts: Uint8Array[];
  bytes: number;
}

/** FlowParser for gRPC over h2c. The stream is consumed as it arrives: whole frame headers, and
 *  frame payloads as far as they go, so memory stays bounded by the limits whatever the frame sizes.
 *  HPACK state changes only when a header block has arrived whole. */
export class GrpcFlowParser implements FlowParser {
  readonly stats: GrpcFlowStats = {
    frames: 0, streams: 0, messages: 0, undecodable: 0, compressed: 0, badFlag: 0, oversize: 0,
    overBudget: 0, truncated: 0, evictedStreams: 0, lostReason: null,
  };
  private phase: Phase = 'preface';
  private frame: FrameHeader | null = null;
  private bodyLeft = 0;
  private paddingLeft = 0;
  private settingsSeen = false;
  private block: PendingBlock | null = null;
  private highestStreamId = 0;
  private readonly hpack: HpackDecoder;
  private readonly streams: GrpcStreams;

  constructor(
    private readonly config: CompiledGrpcConfig,
    maxKeyBytes: number,
  ) {
    this.hpack = new HpackDecoder({ tableBytesLimit: config.limits.maxHeaderTableBytes });
    this.streams = new GrpcStreams(config, maxKeyBytes, this.stats);
  }

  parseRequest(bytes: Uint8Array): ParsedRequests | null {
    if (this.stats.lostReason !== null) return null;
    let at = 0;
    let frameStart = 0;
    const lose = (reason: string): ParsedRequests | null => {
      this.stats.lostReason = reason;
      // Keys of messages completed before the fault are real; the faulty frame is not consumed.
      const found = this.streams.drain();
      return found.length > 0 ? { accesses: found, consumed: frameStart } : null;
    };
    for (;;) {
      if (this.phase === 'preface') {
        const available = Math.min(CONNECTION_PREFACE.length, bytes.length - at);
        if (!startsWithPreface(bytes, at, available)) return lose('the flow does not start with the HTTP/2 connection preface');
        if (available < CONNECTION_PREFACE.length) break;
        at += CONNECTION_PREFACE.length;
        this.phase = 'frame-header';
      } else if (this.phase === 'frame-header') {
        if (bytes.length - at < FRAME_HEADER_BYTES) break;
        const header = readFrameHeader(bytes, at);
        const headerFault = this.checkHeader(header);
        if (headerFault) return lose(headerFault);
        const prefix = payloadPrefixBytes(header);
        if (bytes.length - at < FRAME_HEADER_BYTES + prefix) break;
        const padding = isPadded(header) ? (bytes[at + FRAME_HEADER_BYTES] ?? 0) : 0;
        if (padding > header.length - prefix) return lose(`${frameTypeName(header.type)} padding longer than its payload`);
        frameStart = at;
        at += FRAME_HEADER_BYTES + prefix;
        this.frame = header;
        this.bodyLeft = header.length - prefix - padding;
        this.paddingLeft = padding;
        const beginFault = this.beginFrame(header);
        if (beginFault) return lose(beginFault);
        this.phase = 'frame-body';
      } else if (this.phase === 'frame-body') {
        const n = Math.min(this.bodyLeft, bytes.length - at);
        if (n > 0) this.frameBody(this.frame as FrameHeader, bytes, at, at + n);
        at += n;
        this.bodyLeft -= n;
        if (this.bodyLeft > 0) break;
        this.phase = 'frame-padding';
      } else {
        // Padding octets carry nothing; RFC 9113 lets a receiver leave them unchecked.
        const n = Math.min(this.paddingLeft, bytes.length - at);
        at += n;
        this.paddingLeft -= n;
        if (this.paddingLeft > 0) break;
        const endFault = this.endFrame(this.frame as FrameHeader);
        if (endFault) return lose(endFault);
        this.frame = null;
        this.phase = 'frame-header';
        frameStart = at;
      }
    }
    return { accesses: this.streams.drain(), consumed: at };
  }

  /** HTTP/2 has no marker to find a frame boundary in the middle of a stream, and after a gap the
   *  HPACK table is unknown, so a gap loses the flow for good (-1). The only sync point is the
   *  start of the connection: a flow that has consumed nothing yet resyncs at offset 0 if its
   *  bytes begin with the connection preface. */
  resync(bytes: Uint8Array): number {
    if (this.stats.lostReason !== null) return -1;
    if (this.phase !== 'preface') {
      this.stats.lostReason = 'a gap in the stream: frame boundaries and HPACK state are unknown';
      return -1;
    }
    if (bytes.length === 0) return -1;
    if (startsWithPreface(bytes, 0, Math.min(CONNECTION_PREFACE.length, bytes.length))) return 0;
    this.stats.lostReason = 'the flow does not start with the HTTP/2 connection preface';
    return -1;
  }

  /** Connection errors that a frame header shows given the connection's state (RFC 9113 §5, §6). */
  private checkHeader(header: FrameHeader): string | null {
    const fault = frameHeaderError(header);
    if (fault) return fault;
    const { type, streamId } = header;
    if (!this.settingsSeen) {
      // §3.4: the preface is followed by a SETTINGS frame.
      if (type !== FrameType.SETTINGS || header.flags & FrameFlag.ACK) return 'the preface is not followed by SETTINGS';
      this.settingsSeen = true;
    }
    if (this.block) {
      // §6.2: a header block is continued by CONTINUATION frames of its stream and nothing else.
      if (type !== FrameType.CONTINUATION || streamId !== this.block.streamId) {
        return `${frameTypeName(type)} inside the header block of stream ${this.block.streamId}`;
      }
    } else if (type === FrameType.CONTINUATION) {
      return 'CONTINUATION without a header block';
    }
    const needsOpenedStream =
      type === FrameType.DATA || type === FrameType.RST_STREAM || (type === FrameType.WINDOW_UPDATE && streamId !== 0);
    // §5.1: only HEADERS (and PRIORITY) may name a stream the client has not opened yet.
    if (needsOpenedStream && streamId > this.highestStreamId) return `${frameTypeName(type)} on idle stream ${streamId}`;
    return null;
  }

  private beginFrame(header: FrameHeader): string | null {
    const limit = this.config.limits.maxHeaderBlockBytes;
    if (header.type === FrameType.HEADERS) {
      if (this.bodyLeft > limit) return `header block larger than ${limit} bytes`;
      this.block = { streamId: header.streamId, endStream: (header.flags & FrameFlag.END_STREAM) !== 0, parts: [], bytes: 0 };
    } else if (header.type === FrameType.CONTINUATION && this.block) {
      if (this.block.bytes + this.bodyLeft > limit) return `header block larger than ${limit} bytes`;
    }
    return null;
  }

  private frameBody(header: FrameHeader, bytes: Uint8Array, start: number, end: number): void {
    if (header.type === FrameType.DATA) {
      this.streams.data(header.streamId, bytes, start, end);
    } else if ((header.type === FrameType.HEADERS || header.type === FrameType.CONTINUATION) && this.block) {
      // A copy: the block may only be complete after the caller has reused these bytes.
      this.block.parts.push(bytes.slice(start, end));
      this.block.bytes += end - start;
    }
  }

  private endFrame(header: FrameHeader): string | null {
    this.stats.frames++;
    switch (header.type) {
      case FrameType.DATA:
        if (header.flags & FrameFlag.END_STREAM) this.streams.close(header.streamId);
        return null;
      case FrameType.RST_STREAM:
        this.streams.close(header.streamId);
        return null;
      case FrameType.HEADERS:
      case FrameType.CONTINUATION:
        return header.flags & FrameFlag.END_HEADERS ? this.endHeaderBlock() : null;
      default:
        return null;
    }
  }

  private endHeaderBlock(): string | null {
    const block = this.block;
    if (!block) return null;
    this.block = null;
    const decoded = this.hpack.decode(Buffer.concat(block.parts, block.bytes));
    // An HPACK error leaves the dynamic table unknown: every later block would decode wrongly.
    if (!decoded.ok) return `HPACK: ${decoded.reason}`;
    if (block.streamId > this.highestStreamId) {
      this.highestStreamId = block.streamId;
      this.stats.streams++;
      const method = this.config.methods.get(pathOf(decoded.fields));
      if (method && !block.endStream) this.streams.open(block.streamId, method);
    } else if (block.endStream) {
      // Trailers of an open stream end it.
      this.streams.close(block.streamId);
    }
    return null;
  }
}

/** Whether bytes[at, at + n) equals the first n bytes of the connection preface. */
function startsWithPreface(bytes: Uint8Array, at: number, n: number): boolean {
  for (let i = 0; i < n; i++) if (bytes[at + i] !== CONNECTION_PREFACE[i]) return false;
  return true;
}

/** The request's :path, or '' without one. */
function pathOf(fields: readonly HeaderField[]): string {
  for (const [name, value] of fields) if (name === ':path') return value;
  return '';
}
