// record-parser-setting.ts — pd3-memserver's --record-parser setting: the built-in record format,
// a built-in parser, or a native parser library; a TS/JS parser module is refused, because the
// key index is built on the server's native network thread, which cannot call into JS per write.
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { describeJson, type Setting, type SettingText } from '../cli/settings.js';
import { didYouMean } from '../cli/suggest.js';

/** Names that need no library: the built-in record format of pd3/record.h ("builtin"), and the
 *  built-in parsers, whose records use that same format. */
export const RECORD_PARSER_BUILTINS = ['builtin', 'resp', 'binary'] as const;

/** File names of JS and TS modules (a parser written against pd3/parsers' Parser interface). */
const JS_MODULE = /\.(?:[cm]?js|[cm]?ts)$/i;
/** A bare library name the dynamic loader searches for, e.g. libmyparser.so or libx.so.1. */
const LIBRARY_NAME = /\.so(?:\.\d+)*$/;

function reason(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Checks one value; paths (anything with a "/") are resolved from `baseDir` and must name a file. */
function check(value: string, baseDir: string): string {
  if (value.length === 0) throw new Error('must not be empty');
  if (value.includes('\0')) throw new Error('must not contain NUL characters');
  if ((RECORD_PARSER_BUILTINS as readonly string[]).includes(value)) return value;
  if (JS_MODULE.test(value)) {
    throw new Error(
      `"${value}" is a JS/TS module, which the memory server cannot use: it indexes every write on its native ` +
        'network thread, and a call into JS per write is not supported. Give a native parser library ' +
        '(pd3/parser.h, docs/parsers.md) or one of builtin, resp, binary',
    );
  }
  if (!value.includes('/')) {
    if (LIBRARY_NAME.test(value)) return value;
    throw new Error(
      `unknown record parser "${value}"${didYouMean(value, RECORD_PARSER_BUILTINS)}: ` +
        'use builtin, resp, binary, or the path of a native parser library',
    );
  }
  const path = resolve(baseDir, value);
  let isFile: boolean;
  try {
    isFile = statSync(path).isFile();
  } catch (e) {
    throw new Error(`parser library ${path}: ${reason(e)}`);
  }
  if (!isFile) throw new Error(`parser library ${path} is not a file`);
  return path;
}

/** The setting: "builtin", "resp", "binary", a library path (made absolute: flags from the working
 *  directory, config file values from the file's folder) or a library name for the loader. */
export function recordParserSetting(t: SettingText): Setting<string> {
  return {
    ...t,
    arg: t.arg ?? 'NAME|FILE',
    fromText: (text) => check(text, process.cwd()),
    fromJson(value, baseDir) {
      if (typeof value !== 'string') throw new Error(`must be a string, got ${describeJson(value)}`);
      return check(value, baseDir);
    },
  };
}
