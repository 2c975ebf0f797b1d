// settings.ts — one setting of a deployable: its flag, help line, and how a flag's text or a config
// file's JSON value becomes a checked value. Errors say what is wrong; the caller names the source.
import { resolve } from 'node:path';
import { formatEndpoint, parseEndpoint, type Endpoint, type EndpointRules } from './endpoint.js';
import { formatSize, parseSize } from './sizes.js';

/** How a setting is written on the command line and read from a config file. */
export interface Setting<T> {
  /** Flag name without the leading "--", e.g. "server-id". */
  readonly flag: string;
  /** Placeholder for the value in --help, e.g. "N". */
  readonly arg: string;
  readonly help: string;
  /** The default as shown in --help, if there is one worth showing. */
  readonly fallback?: string;
  /** Parses a flag's text. */
  fromText(text: string): T;
  /** Parses a config file's value; relative paths are taken from `baseDir` (the file's folder). */
  fromJson(value: unknown, baseDir: string): T;
}

/** What every kind of setting is told about itself. */
export interface SettingText {
  flag: string;
  arg?: string;
  help: string;
  fallback?: string;
}

/** "a string", "null", "an array"... for type errors. */
export function describeJson(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  const t = typeof value;
  return t === 'object' || t === 'undefined' ? `an ${t}` : `a ${t} (${JSON.stringify(value)})`;
}

function checkRange(n: number, min: number, max: number, shown: string): number {
  if (n < min || n > max) throw new Error(`must be from ${min} to ${max}, got ${shown}`);
  return n;
}

/** A whole number in [min, max]. */
export function integer(min: number, max: number, t: SettingText): Setting<number> {
  return {
    ...t,
    arg: t.arg ?? 'N',
    fromText(text) {
      if (!/^-?\d+$/.test(text.trim())) throw new Error(`must be a whole number from ${min} to ${max}, got "${text}"`);
      return checkRange(Number(text), min, max, text.trim());
    },
    fromJson(value) {
      if (typeof value !== 'number' || !Number.isInteger(value)) {
        throw new Error(`must be a whole number from ${min} to ${max}, got ${describeJson(value)}`);
      }
      return checkRange(value, min, max, String(value));
    },
  };
}

/** A whole number in [min, max], or the one word `word` (a mode that chooses the number itself). */
export function integerOr<const W extends string>(word: W, min: number, max: number, t: SettingText): Setting<number | W> {
  const n = integer(min, max, t);
  const problem = `must be ${word} or a whole number from ${min} to ${max}`;
  return {
    ...t,
    arg: t.arg ?? `${word}|N`,
    fromText(text) {
      if (text.trim() === word) return word;
      if (!/^-?\d+$/.test(text.trim())) throw new Error(`${problem}, got "${text}"`);
      return n.fromText(text);
    },
    fromJson(value, baseDir) {
      if (value === word) return word;
      if (typeof value !== 'number') throw new Error(`${problem}, got ${describeJson(value)}`);
      return n.fromJson(value, baseDir);
    },
  };
}

/** A byte size in [min, max]: a number of bytes, or a string such as "512M" (see sizes.ts). */
export function size(min: number, max: number, t: SettingText): Setting<number> {
  const bounds = `from ${formatSize(min)} to ${formatSize(max)}`;
  const check = (n: number, shown: string): number => {
    if (n < min || n > max) throw new Error(`must be ${bounds}, got ${shown}`);
    return n;
  };
  return {
    ...t,
    arg: t.arg ?? 'SIZE',
    fromText(text) {
      return check(parseSize(text), `"${text}"`);
    },
    fromJson(value) {
      if (typeof value === 'string') return check(parseSize(value), `"${value}"`);
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
        throw new Error(`must be a size ${bounds} (bytes, or a string such as "64M"), got ${describeJson(value)}`);
      }
      return check(value, String(value));
    },
  };
}

/** A number in [min, max], fractions allowed (e.g. 0.5). */
export function decimal(min: number, max: number, t: SettingText): Setting<number> {
  const bounds = `a number from ${min} to ${max} (fractions allowed, such as 0.5)`;
  const check = (n: number, shown: string): number => {
    if (!(n >= min && n <= max)) throw new Error(`must be ${bounds}, got ${shown}`);
    return n;
  };
  return {
    ...t,
    arg: t.arg ?? 'N',
    fromText(text) {
      if (!/^\d+(\.\d+)?$|^\.\d+$/.test(text.trim())) throw new Error(`must be ${bounds}, got "${text}"`);
      return check(Number(text), text.trim());
    },
    fromJson(value) {
      if (typeof value !== 'number' || !Number.isFinite(value)) throw new Error(`must be ${bounds}, got ${describeJson(value)}`);
      return check(value, String(value));
    },
  };
}

/** A decimal number in [min, maxExclusive). */
export function fraction(min: number, maxExclusive: number, t: SettingText): Setting<number> {
  const check = (n: number, shown: string): number => {
    if (!(n >= min && n < maxExclusive))
      throw new Error(`must be at least ${min} and below ${maxExclusive}, got ${shown}`);
    return n;
  };
  return {
    ...t,
    arg: t.arg ?? 'FRACTION',
    fromText(text) {
      if (!/^\d*\.?\d+$/.test(text.trim())) throw new Error(`must be a decimal number such as 0.15, got "${text}"`);
      return check(Number(text), text.trim());
    },
    fromJson(value) {
      if (typeof value !== 'number')
        throw new Error(`must be a decimal number such as 0.15, got ${describeJson(value)}`);
      return check(value, String(value));
    },
  };
}

/** One of a fixed set of words. */
export function choice<const W extends string>(words: readonly W[], t: SettingText): Setting<W> {
  const parse = (value: unknown, shown: string): W => {
    const found = words.find((w) => w === value);
    if (found === undefined) throw new Error(`must be one of ${words.join(', ')}, got ${shown}`);
    return found;
  };
  return {
    ...t,
    arg: t.arg ?? words.join('|'),
    fromText: (text) => parse(text, `"${text}"`),
    fromJson: (value) => parse(value, describeJson(value)),
  };
}

/** On or off: "on"/"off" as a flag, true/false in a config file. */
export function onOff(t: SettingText): Setting<boolean> {
  return {
    ...t,
    arg: t.arg ?? 'on|off',
    fromText(text) {
      if (text === 'on') return true;
      if (text === 'off') return false;
      throw new Error(`must be on or off, got "${text}"`);
    },
    fromJson(value) {
      if (typeof value !== 'boolean') throw new Error(`must be true or false, got ${describeJson(value)}`);
      return value;
    },
  };
}

/** A non-empty string of at most `maxBytes` UTF-8 bytes, without NUL characters. */
export function text(maxBytes: number, t: SettingText): Setting<string> {
  const check = (s: string): string => {
    if (s.length === 0) throw new Error('must not be empty');
    if (s.includes('\0')) throw new Error('must not contain NUL characters');
    const bytes = Buffer.byteLength(s);
    if (bytes > maxBytes) throw new Error(`must be at most ${maxBytes} bytes, got ${bytes}`);
    return s;
  };
  return {
    ...t,
    arg: t.arg ?? 'STRING',
    fromText: check,
    fromJson(value) {
      if (typeof value !== 'string') throw new Error(`must be a string, got ${describeJson(value)}`);
      return check(value);
    },
  };
}

/** A file or directory path, made absolute: flags from the working directory, config file
 *  values from the config file's folder. */
export function path(t: SettingText): Setting<string> {
  const check = (s: string): string => {
    if (s.length === 0) throw new Error('must not be empty');
    if (s.includes('\0')) throw new Error('must not contain NUL characters');
    return s;
  };
  return {
    ...t,
    arg: t.arg ?? 'PATH',
    fromText: (s) => resolve(check(s)),
    fromJson(value, baseDir) {
      if (typeof value !== 'string') throw new Error(`must be a path string, got ${describeJson(value)}`);
      return resolve(baseDir, check(value));
    },
  };
}

/** One "HOST:PORT". */
export function endpoint(rules: EndpointRules, t: SettingText): Setting<Endpoint> {
  return {
    ...t,
    arg: t.arg ?? 'HOST:PORT',
    fromText: (s) => parseEndpoint(s, rules),
    fromJson(value) {
      if (typeof value !== 'string') throw new Error(`must be a "HOST:PORT" string, got ${describeJson(value)}`);
      return parseEndpoint(value, rules);
    },
  };
}

/** A listener that can be turned off: "HOST:PORT" or "off" (null). */
export function endpointOrOff(rules: EndpointRules, t: SettingText): Setting<Endpoint | null> {
  const parse = (s: string): Endpoint | null => (s === 'off' ? null : parseEndpoint(s, rules));
  return {
    ...t,
    arg: t.arg ?? 'HOST:PORT|off',
    fromText: parse,
    fromJson(value) {
      if (typeof value !== 'string')
        throw new Error(`must be a "HOST:PORT" string or "off", got ${describeJson(value)}`);
      return parse(value);
    },
  };
}

/** One or more distinct "HOST:PORT": comma-separated as a flag; an array of strings (or one
 *  comma-separated string) in a config file. */
export function endpointList(rules: EndpointRules, t: SettingText): Setting<Endpoint[]> {
  const parseAll = (items: string[]): Endpoint[] => {
    if (items.length === 0 || (items.length === 1 && items[0] === ''))
      throw new Error('must name at least one HOST:PORT');
    const seen = new Set<string>();
    return items.map((item) => {
      const ep = parseEndpoint(item.trim(), rules);
      const key = formatEndpoint(ep);
      if (seen.has(key)) throw new Error(`names ${key} twice`);
      seen.add(key);
      return ep;
    });
  };
  return {
    ...t,
    arg: t.arg ?? 'HOST:PORT[,HOST:PORT...]',
    fromText: (s) => parseAll(s.split(',')),
    fromJson(value) {
      if (typeof value === 'string') return parseAll(value.split(','));
      if (!Array.isArray(value)) throw new Error(`must be an array of "HOST:PORT" strings, got ${describeJson(value)}`);
      const items = value.map((v: unknown, i) => {
        if (typeof v !== 'string') throw new Error(`item ${i} must be a "HOST:PORT" string, got ${describeJson(v)}`);
        return v;
      });
      return parseAll(items);
    },
  };
}

/** One "http://HOST:PORT" or "https://HOST:PORT" base URL, checked; returned as given, less a
 *  trailing "/". */
function checkServiceUrl(s: string): string {
  let url: URL;
  try {
    url = new URL(s);
  } catch {
    throw new Error(`"${s}" is not a URL (expected http://HOST:PORT)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`"${s}": the scheme must be http or https`);
  if (url.username !== '' || url.password !== '') throw new Error(`"${s}": credentials do not belong in the URL`);
  if (url.port === '') throw new Error(`"${s}" names no port`);
  if ((url.pathname !== '/' && url.pathname !== '') || url.search !== '' || url.hash !== '') {
    throw new Error(`"${s}": only a scheme, host and port, no path or query`);
  }
  return `${url.protocol}//${url.host}`;
}

/** One or more distinct service URLs (an etcd cluster's client URLs): comma-separated as a flag;
 *  an array of strings (or one comma-separated string) in a config file. */
export function urlList(t: SettingText): Setting<string[]> {
  const parseAll = (items: string[]): string[] => {
    if (items.length === 0 || (items.length === 1 && items[0]!.trim() === '')) throw new Error('must name at least one URL');
    const urls = items.map((item) => checkServiceUrl(item.trim()));
    const twice = urls.find((u, i) => urls.indexOf(u) !== i);
    if (twice !== undefined) throw new Error(`names ${twice} twice`);
    return urls;
  };
  return {
    ...t,
    arg: t.arg ?? 'URL[,URL...]',
    fromText: (s) => parseAll(s.split(',')),
    fromJson(value) {
      if (typeof value === 'string') return parseAll(value.split(','));
      if (!Array.isArray(value)) throw new Error(`must be an array of URL strings, got ${describeJson(value)}`);
      return parseAll(value.map((v: unknown, i) => {
        if (typeof v !== 'string') throw new Error(`item ${i} must be a URL string, got ${describeJson(v)}`);
        return v;
      }));
    },
  };
}
