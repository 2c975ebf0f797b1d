// native.ts — loads the parsers' addon (pd3_parsers.node: the built-in RESP and binary parsers and
// the plug-in loader of pd3/parser.h), for native parsers and the layout constants TS parsers read.
import { loadAddon } from '../common/addon.js';
import type { NativeConstants } from '../common/constants.js';

/** Constants of pd3/parser.h and pd3/binproto.h, as the addon exports them. */
export interface ParserConstants {
  readonly ABI_VERSION: number;
  readonly ACCESS_READ: number;
  readonly ACCESS_WRITE: number;
  readonly ACCESS_DELETE: number;
  /** Smallest output array a caller hands parse_request. */
  readonly MIN_ACCESSES: number;
  readonly BIN_MAGIC: number;
  readonly BIN_GET: number;
  readonly BIN_PUT: number;
  readonly BIN_DEL: number;
  /** Largest `length` of a binary request. */
  readonly BIN_MAX_REQUEST: number;
  readonly SIZEOF_BIN_HEADER: number;
}

/** A loaded native parser (binding class NativeParser). */
export interface NativeParserHandle {
  readonly name: string;
  readonly isPlugin: boolean;
  parseRecord(bytes: Uint8Array): {
    key: Buffer;
    offset: number;
    length: number;
    recordOffset: number;
    recordLength: number;
  }[];
  close(): void;
}

/** One flow of a native parser (binding class NativeFlow). */
export interface NativeFlowHandle {
  /** Every complete request's accesses (ops as ACCESS_* numbers), or null on a protocol error at the start. */
  parseRequest(bytes: Uint8Array): { accesses: { key: Buffer; op: number }[]; consumed: number } | null;
  resync(bytes: Uint8Array): number;
  close(): void;
}

/** The addon's surface (native/addon/parsers/parser_binding.cpp). */
interface ParsersAddon {
  constants: NativeConstants;
  NativeParser: new (nameOrPath: string) => NativeParserHandle;
  NativeFlow: new (parser: NativeParserHandle) => NativeFlowHandle;
  parserConstants: ParserConstants;
}

/** The loaded addon. */
export const addon: ParsersAddon = loadAddon<ParsersAddon>('pd3_parsers');
/** Every wire and layout constant, from the C headers. */
export const constants: NativeConstants = addon.constants;
