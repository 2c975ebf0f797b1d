// http2-frames.ts — HTTP/2 framing as a client sends it (RFC 9113 §3.4, §4.1, §6): the preface,
// the 9-byte frame header, and the checks a frame header must pass whatever the connection state.

/** What a client sends first on an h2c connection with prior knowledge (RFC 9113 §3.4). */
export const CONNECTION_PREFACE: Uint8Array = new Uint8Array(Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1'));

/** Every frame starts with length (24 bits), type, flags and a 31-bit stream id. */
export const FRAME_HEADER_BYTES = 9;

/** Frame types of RFC 9113 §6; any other type is an extension and is skipped (§4.1). */
export const FrameType = {
  DATA: 0x0,
  HEADERS: 0x1,
  PRIORITY: 0x2,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;

/** Frame flags; their meaning depends on the type, hence the shared values. */
export const FrameFlag = {
  END_STREAM: 0x1,
  ACK: 0x1,
  END_HEADERS: 0x4,
  PADDED: 0x8,
  PRIORITY: 0x20,
} as const;

/** A decoded frame header. */
export interface FrameHeader {
  /** Payload bytes after the 9-byte header (0 .. 2^24-1). */
  length: number;
  type: number;
  flags: number;
  /** Stream id with the reserved bit cleared. */
  streamId: number;
}

/** The frame header at bytes[at, at + 9); the caller checks that the bytes are there. */
export function readFrameHeader(bytes: Uint8Array, at: number): FrameHeader {
  const octet = (i: number): number => bytes[at + i] ?? 0;
  return {
    length: octet(0) * 0x10000 + octet(1) * 0x100 + octet(2),
    type: octet(3),
    flags: octet(4),
    streamId: (octet(5) & 0x7f) * 0x1000000 + octet(6) * 0x10000 + octet(7) * 0x100 + octet(8),
  };
}

/** Whether the frame starts with a Pad Length octet: PADDED means that only on the frame types
 *  that define it (of those a client may send, DATA and HEADERS); other types ignore the flag. */
export function isPadded(header: FrameHeader): boolean {
  return (header.type === FrameType.DATA || header.type === FrameType.HEADERS) && (header.flags & FrameFlag.PADDED) !== 0;
}

/** Bytes at the start of the payload before the data or header block fragment: the Pad Length
 *  octet (PADDED) and, for HEADERS, the 5 bytes of the PRIORITY flag's fields. */
export function payloadPrefixBytes(header: FrameHeader): number {
  let prefix = isPadded(header) ? 1 : 0;
  if (header.type === FrameType.HEADERS && header.flags & FrameFlag.PRIORITY) prefix += 5;
  return prefix;
}

/** Why a client→server frame with this header is a connection error whatever the connection's
 *  state (RFC 9113 §6), or null when it is acceptable. Errors a server answers with a stream error
 *  (a bad PRIORITY length) are acceptable here: the connection, and our framing, go on. */
export function frameHeaderError(header: FrameHeader): string | null {
  const { type, flags, streamId, length } = header;
  switch (type) {
    case FrameType.DATA:
    case FrameType.HEADERS:
      if (streamId === 0) return `${frameTypeName(type)} on stream 0`;
      // Streams a client opens have odd ids (§5.1.1).
      if (streamId % 2 === 0) return `${frameTypeName(type)} on even stream ${streamId}`;
      if (length < payloadPrefixBytes(header)) return `${frameTypeName(type)} too short for its padding/priority fields`;
      return null;
    case FrameType.PRIORITY:
    case FrameType.CONTINUATION:
      return streamId === 0 ? `${frameTypeName(type)} on stream 0` : null;
    case FrameType.RST_STREAM:
      if (streamId === 0) return 'RST_STREAM on stream 0';
      return length === 4 ? null : `RST_STREAM of length ${length}`;
    case FrameType.SETTINGS:
      if (streamId !== 0) return `SETTINGS on stream ${streamId}`;
      if (flags & FrameFlag.ACK && length !== 0) return 'SETTINGS ACK with a payload';
      return length % 6 === 0 ? null : `SETTINGS of length ${length}`;
    case FrameType.PUSH_PROMISE:
      return 'PUSH_PROMISE from a client';
    case FrameType.PING:
      if (streamId !== 0) return `PING on stream ${streamId}`;
      return length === 8 ? null : `PING of length ${length}`;
    case FrameType.GOAWAY:
      if (streamId !== 0) return `GOAWAY on stream ${streamId}`;
      return length >= 8 ? null : `GOAWAY of length ${length}`;
    case FrameType.WINDOW_UPDATE:
      return length === 4 ? null : `WINDOW_UPDATE of length ${length}`;
    default:
      return null;
  }
}

/** A frame type's name for messages. */
export function frameTypeName(type: number): string {
  const known = Object.entries(FrameType).find(([, value]) => value === type);
  return known ? known[0] : `frame type 0x${type.toString(16)}`;
}
