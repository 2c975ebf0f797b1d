// help.ts — the --help text of a deployable, rendered from its setting table.
import type { SettingTable } from './config.js';

/** What --help says besides the flags. */
export interface HelpText {
  name: string;
  /** One paragraph: what the program is. */
  summary: string;
  /** Flags that must be given (by flag name), marked "required". */
  required: readonly string[];
  /** What the "ready" log line carries, e.g. "the segment and the servers". */
  ready: string;
}

const WIDTH = 100;

function wrap(text: string, indent: number, first: number): string[] {
  const lines: string[] = [];
  let line = '';
  let room = WIDTH - first;
  for (const word of text.split(/\s+/)) {
    if (line.length > 0 && line.length + 1 + word.length > room) {
      lines.push(line);
      line = word;
      room = WIDTH - indent;
    } else {
      line = line.length > 0 ? `${line} ${word}` : word;
    }
  }
  if (line.length > 0) lines.push(line);
  return lines;
}

/** Renders usage, every flag with its help and default, and the notes. */
export function renderHelp(table: SettingTable, h: HelpText): string {
  const rows: Array<[string, string]> = [
    ['--config FILE', 'JSON config file holding any of the settings below; flags override it'],
  ];
  for (const s of Object.values(table)) {
    const notes = [
      h.required.includes(s.flag) ? 'required' : '',
      s.fallback !== undefined ? `default ${s.fallback}` : '',
    ]
      .filter((n) => n.length > 0)
      .join('; ');
    rows.push([`--${s.flag} ${s.arg}`, notes.length > 0 ? `${s.help} (${notes})` : s.help]);
  }
  rows.push(['--help', 'print this text and exit'], ['--version', 'print the version and exit']);
  const column = Math.min(34, Math.max(...rows.map(([flag]) => flag.length)) + 4);
  const out = [`Usage: ${h.name} [--config FILE] [flags]`, '', ...wrap(h.summary, 0, 0), '', 'Flags:'];
  for (const [flag, help] of rows) {
    const start = `  ${flag}`;
    const pad = start.length + 2 > column ? `${start}\n${' '.repeat(column)}` : start.padEnd(column);
    const body = wrap(help, column, column);
    out.push(pad + body[0], ...body.slice(1).map((l) => ' '.repeat(column) + l));
  }
  out.push(
    '',
    ...wrap(
      'Config file keys are the flag names in camelCase (--server-id → serverId); unknown keys are refused.',
      0,
      0,
    ),
  );
  const notes = [
    'Auth token (required): --token or --token-file, else "token" or "tokenFile" in the config file, ' +
      'else the environment variable PD3_TOKEN.',
    'Logs: JSON lines on stderr, {"ts","level","component","event","msg",...}; ' +
      `the first line after start is event "ready" with ${h.ready}.`,
    'Exit status: 0 after SIGINT or SIGTERM, 1 if it cannot start or fails, 2 for bad flags or config.',
  ];
  for (const note of notes) out.push('', ...wrap(note, 0, 0));
  return `${out.join('\n')}\n`;
}
