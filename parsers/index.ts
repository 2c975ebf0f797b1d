// index.ts — pd3/parsers: the parser plug-in contract of ARCHITECTURE.md §6. Built-in parsers
// (RESP, gRPC, binary) arrive with the parsers issue; this module already fixes their types.

/** What a client request does to a key. Read-modify-write counts as READ. */
export type AccessOp = 'READ' | 'WRITE' | 'DELETE';

/** One key a request will touch, in packet order. */
export interface Access {
  key: Uint8Array;
  op: AccessOp;
}

/** parseRequest's result: the accesses of every complete request, and the bytes they used. */
export interface ParsedRequests {
  accesses: Access[];
  consumed: number;
}

/** One key inside a data record written to or read from remote memory. */
export interface RecordKey {
  key: Uint8Array;
  offset: number;
  length: number;
}

/** A protocol parser: both functions are pure and total (any bytes in, never a throw). */
export interface Parser {
  readonly name: string;
  parseRequest(bytes: Uint8Array): ParsedRequests;
  parseRecord(bytes: Uint8Array): RecordKey[];
}
