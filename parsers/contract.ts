// contract.ts — the parser plug-in contract (docs/architecture.md §6), the TS mirror of
// native/include/pd3/parser.h: what every parser, native or TS, answers.

/** What a client request does to a key. Read-modify-write counts as READ. */
export type AccessOp = 'READ' | 'WRITE' | 'DELETE';

/** One key a request will touch, in packet order. */
export interface Access {
  key: Uint8Array;
  op: AccessOp;
}

/** parseRequest's result: the accesses of every complete request, and the bytes they used
 *  (0: the first request is still incomplete). */
export interface ParsedRequests {
  accesses: Access[];
  consumed: number;
}

/** One key inside a data record written to or read from remote memory, with offsets into the
 *  bytes handed to parseRecord: its value (`offset`, `length`) and the record holding it
 *  (`recordOffset`, `recordLength`; key and value lie inside it, one key per record), as in
 *  pd3_record_key of pd3/parser.h. */
export interface RecordKey {
  key: Uint8Array;
  /** Where the value starts. */
  offset: number;
  /** Bytes of the value. */
  length: number;
  /** Where the record holding the key starts. */
  recordOffset: number;
  /** Bytes of that record, key and value included. */
  recordLength: number;
}

/** One TCP flow's parser state (HPACK tables, a partial message...). Both methods are total: any
 *  bytes in, never a throw, never a guessed key. */
export interface FlowParser {
  /** Parses whole requests from the start of `bytes` (the flow's stream, in order). Throws nothing;
   *  returns `null` when the bytes at the start are not a request of this protocol (lost sync). */
  parseRequest(bytes: Uint8Array): ParsedRequests | null;
  /** After a gap or lost sync: the offset of the first plausible request boundary, or -1. */
  resync(bytes: Uint8Array): number;
}

/** A protocol parser plug-in. */
export interface Parser {
  readonly name: string;
  /** State for one TCP flow (one per connection). */
  openFlow(): FlowParser;
  /** The keys inside a data record (pure, total). */
  parseRecord(bytes: Uint8Array): RecordKey[];
}
