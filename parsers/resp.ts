// resp.ts — the built-in RESP (Redis) parser, native (native/parsers/resp_parser.cpp): arrays of
// bulk strings and inline commands → the keys they touch. Command table: docs/parsers.md.
import type { Parser } from './contract.js';
import { NativeParser } from './native-parser.js';

/** Redis requests → accesses. Stateless: flows share nothing. */
export const resp: Parser = new NativeParser('resp');
