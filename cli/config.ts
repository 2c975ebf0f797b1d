// config.ts — a deployable's settings from its command line and its JSON config file: reading the
// file, refusing unknown keys and bad values (UsageError naming the flag or key), flags over file.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgv } from './argv.js';
import type { Setting } from './settings.js';
import { didYouMean } from './suggest.js';
import { UsageError } from './usage-error.js';

/** The settings of one deployable, by config key (camelCase). */
export type SettingTable = Readonly<Record<string, Setting<unknown>>>;

/** Checked values of a table; a key is absent when nobody set it. */
export type SettingValues<S extends SettingTable> = {
  [K in keyof S]?: S[K] extends Setting<infer T> ? T : never;
};

/** Values by where they came from: the command line over the config file. */
export interface SettingLayers<S extends SettingTable> {
  flags: SettingValues<S>;
  file: SettingValues<S>;
  /** Flags over file. */
  merged: SettingValues<S>;
  /** How messages name the file layer: "config file /etc/pd3.json" or "options". */
  fileLabel: string;
}

/** What a command line asks for. */
export type Command<O> = { kind: 'help' } | { kind: 'version' } | { kind: 'run'; options: O };

/** A parsed config file. */
export interface ConfigSource {
  /** "config file /etc/pd3.json" or "options": how messages name it. */
  label: string;
  /** Relative paths in it are taken from here. */
  baseDir: string;
  data: Readonly<Record<string, unknown>>;
}

function reason(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Reads and parses a JSON config file holding one object. Throws UsageError. */
export function readConfigFile(path: string): ConfigSource {
  const label = `config file ${path}`;
  let textContent: string;
  try {
    textContent = readFileSync(path, 'utf8');
  } catch (e) {
    throw new UsageError(`--config ${path}: cannot read it: ${reason(e)}`);
  }
  let data: unknown;
  try {
    data = JSON.parse(textContent);
  } catch (e) {
    throw new UsageError(`--config ${path}: not valid JSON: ${reason(e)}`);
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new UsageError(
      `--config ${path}: must hold one JSON object of settings, ` +
        `got ${Array.isArray(data) ? 'an array' : JSON.stringify(data)}`,
    );
  }
  return { label, baseDir: dirname(resolve(path)), data: data as Record<string, unknown> };
}

/** Checks every key of an object of settings (a config file, or options given in code). */
export function valuesFromObject<S extends SettingTable>(table: S, source: ConfigSource): SettingValues<S> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(source.data)) {
    const setting = Object.hasOwn(table, key) ? table[key] : undefined;
    if (setting === undefined) {
      throw new UsageError(
        `${source.label}: unknown key "${key}"${didYouMean(key, Object.keys(table), (c) => `"${c}"`)}`,
      );
    }
    if (value === undefined) continue; // only possible from code: an option left unset
    try {
      out[key] = setting.fromJson(value, source.baseDir);
    } catch (e) {
      throw new UsageError(`${source.label}, key "${key}": ${reason(e)}`);
    }
  }
  return out as SettingValues<S>;
}

/** Checks the value of every flag given. */
export function valuesFromFlags<S extends SettingTable>(
  table: S,
  flags: ReadonlyMap<string, string>,
): SettingValues<S> {
  const out: Record<string, unknown> = {};
  for (const [key, setting] of Object.entries(table)) {
    const textValue = flags.get(setting.flag);
    if (textValue === undefined) continue;
    try {
      out[key] = setting.fromText(textValue);
    } catch (e) {
      throw new UsageError(`--${setting.flag}: ${reason(e)}`);
    }
  }
  return out as SettingValues<S>;
}

/** Flags over file. */
export function layer<S extends SettingTable>(
  flags: SettingValues<S>,
  file: SettingValues<S>,
  fileLabel: string,
): SettingLayers<S> {
  return { flags, file, merged: { ...file, ...flags }, fileLabel };
}

/** Parses a command line of `table`'s flags plus --config FILE, --help and --version, and builds
 *  the deployable's options from the layers. Throws UsageError. */
export function parseCommand<S extends SettingTable, O>(
  table: S,
  argv: readonly string[],
  build: (layers: SettingLayers<S>) => O,
): Command<O> {
  const known = new Set(['config', ...Object.values(table).map((s) => s.flag)]);
  const parsed = parseArgv(argv, known);
  if (parsed.help) return { kind: 'help' };
  if (parsed.version) return { kind: 'version' };
  const configPath = parsed.values.get('config');
  parsed.values.delete('config');
  const flags = valuesFromFlags(table, parsed.values);
  if (configPath === undefined) return { kind: 'run', options: build(layer(flags, {}, 'config file')) };
  const file = readConfigFile(configPath);
  return { kind: 'run', options: build(layer(flags, valuesFromObject(table, file), file.label)) };
}

/** Builds options from an object shaped like the config file (for code that runs a deployable
 *  in-process). Throws UsageError naming the bad key. */
export function optionsFromObject<S extends SettingTable, O>(
  table: S,
  data: object,
  build: (layers: SettingLayers<S>) => O,
): O {
  const source: ConfigSource = { label: 'options', baseDir: process.cwd(), data: data as Record<string, unknown> };
  return build(layer({}, valuesFromObject(table, source), source.label));
}

/** The object without its undefined-valued keys (native option readers treat a present key as set). */
export function withoutUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
