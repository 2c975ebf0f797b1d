// resp-reader.ts — reads client requests from a connection's byte stream: RESP arrays of bulk
// strings (what client libraries send) and inline commands, any number per chunk and split
// anywhere. Framing errors end the stream with a message for the client, as Redis does.
import { splitInline } from './inline-args.js';

/** Bounds on what one request may be. */
export interface RespLimits {
  /** Longest bulk string (Redis: proto-max-bulk-len). */
  maxBulkBytes: number;
  /** Longest inline line or header line. */
  maxInlineBytes: number;
  /** Most elements of one array request. */
  maxArgs: number;
  /** Most bytes one request may take in all (bounds what an incomplete request buffers). */
  maxRequestBytes: number;
}

/** What one chunk completed. */
export interface ReadResult {
  /** Whole requests, in order; each is the command name and its arguments. */
  commands: Buffer[][];
  /** A framing error (reply text without "-"): the requests before it are valid, the stream ends. */
  error: string | null;
}

// Outcome of parsing one request (kept in fields to avoid an object per request).
const DONE = 0;
const INCOMPLETE = 1;
const FAILED = 2;

/** One connection's request reader. */
export class RespReader {
  private readonly limits: RespLimits;
  private chunks: Buffer[] = [];
  private buffered = 0;
  private need = 1; // bytes buffered before parsing is worth trying again
  private broken = false;
  // Results of parseOne.
  private args: Buffer[] | null = null;
  private next = 0;
  private message = '';

  constructor(limits: RespLimits) {
    this.limits = limits;
  }

  /** Adds bytes from the socket; returns the requests they complete. After an error every later
   *  call returns nothing (the connection is closing). */
  feed(chunk: Buffer): ReadResult {
    const out: ReadResult = { commands: [], error: null };
    if (this.broken || chunk.length === 0) return out;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    if (this.buffered < this.need) return out;
    const data = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.buffered);
    let pos = 0;
    while (pos < data.length) {
      const r = this.parseOne(data, pos);
      if (r === DONE) {
        if (this.args !== null) out.commands.push(this.args);
        pos = this.next;
        continue;
      }
      if (r === FAILED) {
        this.broken = true;
        this.chunks = [];
        this.buffered = 0;
        out.error = this.message;
        return out;
      }
      break; // INCOMPLETE: this.need says how much of data[pos..] must arrive first
    }
    const rest = data.length - pos;
    this.chunks = rest > 0 ? [data.subarray(pos)] : [];
    this.buffered = rest;
    if (rest === 0) this.need = 1;
    return out;
  }

  private fail(message: string): number {
    this.message = message;
    return FAILED;
  }

  private incomplete(need: number, from: number): number {
    if (need - from > this.limits.maxRequestBytes) return this.fail('ERR Protocol error: request too large');
    this.need = need - from;
    return INCOMPLETE;
  }

  // Finds "\r\n" ending a header line that starts at `from`: the index of "\r", -1 while
  // incomplete, -2 when the line is too long or the "\r" is not followed by "\n".
  private lineEnd(data: Buffer, from: number): number {
    const limit = Math.min(data.length, from + this.limits.maxInlineBytes);
    const cr = data.indexOf(0x0d, from);
    if (cr < 0 || cr >= limit) return data.length - from > this.limits.maxInlineBytes ? -2 : -1;
    if (cr + 1 >= data.length) return -1;
    return data[cr + 1] === 0x0a ? cr : -2;
  }

  // A decimal in data[from, to): digits with an optional leading "-"; NaN if malformed.
  private decimal(data: Buffer, from: number, to: number): number {
    if (to <= from || to - from > 18) return NaN;
    let i = from;
    let sign = 1;
    if (data[i] === 0x2d) {
      sign = -1;
      i++;
      if (i === to) return NaN;
    }
    let v = 0;
    for (; i < to; ++i) {
      const c = data[i]!;
      if (c < 0x30 || c > 0x39) return NaN;
      v = v * 10 + (c - 0x30);
    }
    return sign * v;
  }

  private parseOne(data: Buffer, start: number): number {
    this.args = null;
    if (data[start] !== 0x2a) return this.parseInline(data, start);
    const cr = this.lineEnd(data, start + 1);
    if (cr === -1) return this.incomplete(data.length + 1, start);
    if (cr === -2) return this.fail('ERR Protocol error: too big mbulk count string');
    const count = this.decimal(data, start + 1, cr);
    if (!(count <= this.limits.maxArgs) || Number.isNaN(count)) return this.fail('ERR Protocol error: invalid multibulk length');
    let pos = cr + 2;
    if (count <= 0) {
      this.next = pos; // an empty request: skipped
      return DONE;
    }
    const args: Buffer[] = [];
    for (let i = 0; i < count; ++i) {
      if (pos >= data.length) return this.incomplete(pos + 1, start);
      if (data[pos] !== 0x24) {
        return this.fail(`ERR Protocol error: expected '$', got '${String.fromCharCode(data[pos]!)}'`);
      }
      const end = this.lineEnd(data, pos + 1);
      if (end === -1) return this.incomplete(data.length + 1, start);
      if (end === -2) return this.fail('ERR Protocol error: too big bulk count string');
      const len = this.decimal(data, pos + 1, end);
      if (!(len >= 0 && len <= this.limits.maxBulkBytes)) return this.fail('ERR Protocol error: invalid bulk length');
      const body = end + 2;
      if (body + len + 2 > data.length) return this.incomplete(body + len + 2, start);
      if (data[body + len] !== 0x0d || data[body + len + 1] !== 0x0a) {
        return this.fail('ERR Protocol error: bulk string not followed by CRLF');
      }
      args.push(data.subarray(body, body + len));
      pos = body + len + 2;
    }
    this.args = args;
    this.next = pos;
    return DONE;
  }

  private parseInline(data: Buffer, start: number): number {
    const nl = data.indexOf(0x0a, start);
    if (nl < 0 || nl - start > this.limits.maxInlineBytes) {
      if (data.length - start > this.limits.maxInlineBytes) return this.fail('ERR Protocol error: too big inline request');
      return this.incomplete(data.length + 1, start);
    }
    const lineEnd = nl > start && data[nl - 1] === 0x0d ? nl - 1 : nl;
    const words = splitInline(data.subarray(start, lineEnd));
    if (words === null) return this.fail('ERR Protocol error: unbalanced quotes in request');
    this.args = words.length > 0 ? words : null; // an empty line is skipped
    this.next = nl + 1;
    return DONE;
  }
}
