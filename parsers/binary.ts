// binary.ts — the built-in parser of the example apps' binary request format
// (native/include/pd3/binproto.h), native (native/parsers/binary_parser.cpp).
import type { Parser } from './contract.js';
import { NativeParser } from './native-parser.js';

/** Binary GET/PUT/DEL requests → READ/WRITE/DELETE accesses. Stateless: flows share nothing. */
export const binary: Parser = new NativeParser('binary');
