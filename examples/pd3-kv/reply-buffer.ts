// reply-buffer.ts — RESP2 replies written into a slab: each batch's replies are taken as one Buffer
// (one socket write) and the slab goes on after them, replaced by a fresh one when full.

const SLAB_BYTES = 64 * 1024;
const CRLF = 0x0a0d; // "\r\n" as a little-endian u16

/** Where reply bytes accumulate between take() calls. */
export class ReplyBuffer {
  private buf = Buffer.allocUnsafe(SLAB_BYTES);
  private start = 0; // first byte not yet taken
  private end = 0;

  /** A position to truncate() back to (relative to what has not been taken). */
  mark(): number {
    return this.end - this.start;
  }

  /** Drops what was written since `mark` (a command that will be run again). */
  truncate(mark: number): void {
    this.end = this.start + mark;
  }

  /** The bytes written since the last take(); the caller owns them. */
  take(): Buffer {
    const out = this.buf.subarray(this.start, this.end);
    this.start = this.end;
    return out;
  }

  /** "+text" (text must not hold CR or LF). */
  simple(text: string): void {
    this.line(0x2b, text);
  }

  /** "-message"; CR and LF in it become spaces, as Redis does. */
  error(message: string): void {
    this.line(0x2d, message.replace(/[\r\n]/g, ' '));
  }

  integer(n: number | bigint): void {
    this.line(0x3a, String(n));
  }

  /** A bulk string, or the null bulk string. */
  bulk(value: Uint8Array | null): void {
    if (value === null) {
      this.raw('$-1\r\n');
      return;
    }
    this.line(0x24, String(value.length));
    this.room(value.length + 2);
    this.buf.set(value, this.end);
    this.end += value.length;
    this.buf.writeUInt16LE(CRLF, this.end);
    this.end += 2;
  }

  /** A bulk string of text (latin1: one byte per char). */
  bulkText(text: string): void {
    this.bulk(Buffer.from(text, 'latin1'));
  }

  /** The header of an array of `n` replies, or the null array for -1. */
  array(n: number): void {
    this.line(0x2a, String(n));
  }

  private line(prefix: number, text: string): void {
    this.room(text.length + 3);
    this.buf[this.end++] = prefix;
    this.end += this.buf.write(text, this.end, 'latin1');
    this.buf.writeUInt16LE(CRLF, this.end);
    this.end += 2;
  }

  private raw(text: string): void {
    this.room(text.length);
    this.end += this.buf.write(text, this.end, 'latin1');
  }

  // Makes room for n more bytes: a new slab holding what has not been taken yet.
  private room(n: number): void {
    if (this.end + n <= this.buf.length) return;
    const kept = this.end - this.start;
    const next = Buffer.allocUnsafe(Math.max(SLAB_BYTES, 2 * (kept + n)));
    this.buf.copy(next, 0, this.start, this.end);
    this.buf = next;
    this.start = 0;
    this.end = kept;
  }
}
