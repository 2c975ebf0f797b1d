// grpc-messages.ts — reassembles one stream's DATA bytes into gRPC length-prefixed messages
// (1-byte compressed flag, 4-byte big-endian length, message), holding only what it must.

/** The length prefix of every gRPC message. */
export const GRPC_PREFIX_BYTES = 5;

/** Why a message was passed over without being decoded. */
export type SkipReason = 'compressed' | 'bad-flag' | 'oversize' | 'over-budget';

/** Message bytes held by all streams of one connection, against a cap. A message reserves its
 *  whole length when its prefix arrives, so the cap holds however its bytes trickle in. */
export interface MessageBudget {
  held: number;
  readonly limit: number;
}

/** Where complete messages go. `bytes` may alias the caller's input: use it before returning. */
export interface MessageSink {
  message(bytes: Uint8Array): void;
  skipped(reason: SkipReason): void;
}

/** One stream's message reassembly. */
export class GrpcMessageAssembler {
  private readonly prefix = new Uint8Array(GRPC_PREFIX_BYTES);
  private prefixHave = 0;
  /** Length of the message being collected, or -1 while reading a prefix. */
  private bodyLength = -1;
  private parts: Uint8Array[] = [];
  private bodyHave = 0;
  /** Bytes of a skipped message still to pass over. */
  private skipLeft = 0;

  constructor(
    private readonly maxMessageBytes: number,
    private readonly budget: MessageBudget,
    private readonly sink: MessageSink,
  ) {}

  /** Takes the stream's next DATA bytes, bytes[start, end). */
  push(bytes: Uint8Array, start: number, end: number): void {
    let at = start;
    while (at < end) {
      if (this.skipLeft > 0) {
        const n = Math.min(this.skipLeft, end - at);
        this.skipLeft -= n;
        at += n;
      } else if (this.bodyLength < 0) {
        const n = Math.min(GRPC_PREFIX_BYTES - this.prefixHave, end - at);
        this.prefix.set(bytes.subarray(at, at + n), this.prefixHave);
        this.prefixHave += n;
        at += n;
        if (this.prefixHave === GRPC_PREFIX_BYTES) this.startMessage();
      } else {
        at = this.collect(bytes, at, end);
      }
    }
  }

  /** The stream ended or was reset. Returns whether a message was cut short; its bytes are dropped
   *  and its reservation returned. */
  close(): boolean {
    const cut = this.prefixHave > 0 || this.bodyLength >= 0 || this.skipLeft > 0;
    if (this.bodyLength >= 0) this.budget.held -= this.bodyLength;
    this.parts = [];
    this.bodyLength = -1;
    this.prefixHave = 0;
    this.skipLeft = 0;
    return cut;
  }

  private startMessage(): void {
    this.prefixHave = 0;
    const flag = this.prefix[0] ?? 0;
    const length = new DataView(this.prefix.buffer).getUint32(1, false);
    let skip: SkipReason | null = null;
    // Flag 1: compressed with the stream's grpc-encoding; we do not inflate (docs/grpc-parser.md).
    if (flag === 1) skip = 'compressed';
    else if (flag !== 0) skip = 'bad-flag';
    else if (length > this.maxMessageBytes) skip = 'oversize';
    else if (this.budget.held + length > this.budget.limit) skip = 'over-budget';
    if (skip) {
      this.skipLeft = length;
      this.sink.skipped(skip);
    } else if (length === 0) {
      this.sink.message(new Uint8Array(0));
    } else {
      this.bodyLength = length;
      this.bodyHave = 0;
      this.budget.held += length;
    }
  }

  private collect(bytes: Uint8Array, at: number, end: number): number {
    const n = Math.min(this.bodyLength - this.bodyHave, end - at);
    let whole: Uint8Array | null = null;
    if (this.bodyHave === 0 && n === this.bodyLength) {
      // The whole message is in this input: decode it in place, no copy.
      whole = bytes.subarray(at, at + n);
    } else {
      // The input is the caller's and may be reused once we return: keep a copy.
      this.parts.push(bytes.slice(at, at + n));
      this.bodyHave += n;
      if (this.bodyHave === this.bodyLength) whole = Buffer.concat(this.parts, this.bodyLength);
    }
    if (whole) {
      this.budget.held -= this.bodyLength;
      this.bodyLength = -1;
      this.bodyHave = 0;
      this.parts = [];
      this.sink.message(whole);
    }
    return at + n;
  }
}
