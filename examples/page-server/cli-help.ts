// cli-help.ts — pd3-page-server --help.
import { PAGE_SERVER_SETTINGS } from './cli-settings.js';

const SUMMARY = [
  'pd3-page-server: 4 KiB pages behind gRPC (service pagestore.Pages in pages.proto), a small local',
  'cache, and the rest of the pages in remote memory reached through the PD3 host library: directly',
  '(sync, async, leap) or through a pd3-agent (pd3-noprefetch, pd3). In mode pd3 run the agent with',
  '--prefetch-parser grpc --prefetch-parser-config examples/page-server/pages-config.json and let',
  'clients connect to its tee port (or mirror the --listen port).',
];

const NOTES = [
  'Auth token (needed with --memservers): --token or --token-file, else "token" or "tokenFile" in the',
  'config file, else the environment variable PD3_TOKEN.',
  '',
  'Logs: JSON lines on stderr, {"ts","level","component","event","msg",...}; event "ready" once the',
  'pages are loaded and the port is bound, with the port; event "stats" with the counters at stop.',
  '',
  'Exit status: 0 after SIGINT or SIGTERM, 1 if it cannot start or fails, 2 for bad flags or config.',
];

/** The --help text. */
export function pageServerHelp(): string {
  const lines = ['Usage: pd3-page-server --mode MODE [--config FILE] [flags]', '', ...SUMMARY, '', 'Flags:'];
  lines.push('  --config FILE', '      JSON file of the settings below (keys in camelCase); flags override it');
  for (const s of Object.values(PAGE_SERVER_SETTINGS)) {
    lines.push(`  --${s.flag} ${s.arg}`, `      ${s.help}${'fallback' in s && s.fallback !== undefined ? ` (default ${s.fallback})` : ''}`);
  }
  lines.push('  --help', '      print this text and exit', '  --version', '      print the version and exit', '', ...NOTES);
  return `${lines.join('\n')}\n`;
}
