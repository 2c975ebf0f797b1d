// native-parser.ts — a Parser over a native parser (a built-in or a plug-in library, ABI in
// native/include/pd3/parser.h) through the addon's thin binding, native/addon/parsers/parser_binding.cpp.
import { addon, type NativeFlowHandle, type NativeParserHandle, type ParserConstants } from './native.js';
import type { AccessOp, FlowParser, ParsedRequests, Parser, RecordKey } from './contract.js';

/** Every parser constant, from the C headers. */
export const parserConstants: ParserConstants = addon.parserConstants;

const OPS = new Map<number, AccessOp>([
  [parserConstants.ACCESS_READ, 'READ'],
  [parserConstants.ACCESS_WRITE, 'WRITE'],
  [parserConstants.ACCESS_DELETE, 'DELETE'],
]);

/** ACCESS_* number → op name. */
function opName(op: number): AccessOp {
  const name = OPS.get(op);
  if (name === undefined) throw new Error(`native parser returned unknown access op ${op}`); // the binding checks ops
  return name;
}

/** One TCP flow of a native parser. */
export class NativeFlowParser implements FlowParser {
  constructor(private readonly flow: NativeFlowHandle) {}

  parseRequest(bytes: Uint8Array): ParsedRequests | null {
    const r = this.flow.parseRequest(bytes);
    if (r === null) return null;
    return { accesses: r.accesses.map((a) => ({ key: a.key, op: opName(a.op) })), consumed: r.consumed };
  }

  resync(bytes: Uint8Array): number {
    return this.flow.resync(bytes);
  }

  /** Frees the flow's state now (a stateful plug-in's) instead of at garbage collection. */
  close(): void {
    this.flow.close();
  }
}

/** A native parser: "resp", "binary", or the path of a parser library (pd3/parser.h ABI). */
export class NativeParser implements Parser {
  readonly name: string;
  private readonly handle: NativeParserHandle;

  /** Throws an Error with `.code` (e.g. PD3_E_NOT_FOUND, PD3_E_BAD_VERSION) and the reason when the
   *  library cannot be used. */
  constructor(nameOrPath: string) {
    this.handle = new addon.NativeParser(nameOrPath);
    this.name = this.handle.name;
  }

  /** True for a parser loaded from a shared library. */
  get isPlugin(): boolean {
    return this.handle.isPlugin;
  }

  openFlow(): NativeFlowParser {
    return new NativeFlowParser(new addon.NativeFlow(this.handle));
  }

  /** The parser's parse_record, or the built-in pd3/record.h format when it has none. */
  parseRecord(bytes: Uint8Array): RecordKey[] {
    return this.handle.parseRecord(bytes);
  }

  /** Releases the parser; a library unloads once its open flows are closed too. */
  close(): void {
    this.handle.close();
  }
}

/** Loads a parser library (or names a built-in); see NativeParser. */
export function loadParser(nameOrPath: string): NativeParser {
  return new NativeParser(nameOrPath);
}
