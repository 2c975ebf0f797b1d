// processes.ts — starts real pd3-memserver and pd3-agent processes for benchmarks and integration
// tests, waits for their "ready" log line, and stops them (always: SIGKILL after a grace period).
import type { ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { spawnOnSide, type Side } from './core-layout.js';

const dist = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Compiled CLI entry points. */
export const MEMSERVER_CLI = join(dist, 'memserver', 'cli.js');
export const AGENT_CLI = join(dist, 'dpu', 'cli.js');

/** A started daemon. */
export interface Daemon {
  readonly child: ChildProcess;
  /** Fields of its "ready" log line. */
  readonly ready: Record<string, unknown>;
  /** Every log line so far (JSON text), for assertions and post-mortems. */
  readonly logs: string[];
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit code (null if killed by signal). */
  stop(graceMs?: number): Promise<number | null>;
  /** SIGKILL at once (a crash), resolves when it is gone. */
  kill(): Promise<void>;
}

const live = new Set<ChildProcess>();

process.on('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/** A TCP port on 127.0.0.1 that nothing listens on right now (the caller binds it next; another
 *  process could take it in between, which loopback tests and benchmarks accept). */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** Asks every daemon still running to stop (SIGTERM: they release what they hold, segments
 *  included), and resolves once all are gone or `graceMs` passed (the rest are then SIGKILLed). */
export async function stopAllDaemons(graceMs = 3000): Promise<void> {
  const children = [...live];
  const gone = children.map((c) => new Promise<void>((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', () => r()))));
  for (const c of children) c.kill('SIGTERM');
  const timer = setTimeout(() => children.forEach((c) => c.kill('SIGKILL')), graceMs);
  await Promise.all(gone);
  clearTimeout(timer);
}

/** How a daemon is started: how long its "ready" line may take, and its side of the core layout
 *  ('other' — agent, memory servers — unless it is the data system, 'host'). */
export interface DaemonStart {
  timeoutMs?: number;
  side?: Side;
}

/** Spawns `node script ...args` with the auth token in PD3_TOKEN (never on a command line, where
 *  `ps` shows it) and waits for its "ready" line on stderr (15 s unless `timeoutMs` says). */
export function startDaemon(script: string, args: string[], token: string, { timeoutMs = 15000, side = 'other' }: DaemonStart = {}): Promise<Daemon> {
  const child = spawnOnSide(side, process.execPath, [script, ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, PD3_TOKEN: token },
  });
  live.add(child);
  const logs: string[] = [];
  let exited: Promise<number | null>;
  {
    let resolveExit!: (code: number | null) => void;
    exited = new Promise((r) => (resolveExit = r));
    child.on('exit', (code) => {
      live.delete(child);
      resolveExit(code);
    });
  }
  const stop = async (graceMs = 5000): Promise<number | null> => {
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    const code = await exited;
    clearTimeout(timer);
    return code;
  };
  const kill = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  return new Promise((resolve, reject) => {
    let buffered = '';
    let settled = false;
    const fail = (why: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`${script} ${args.join(' ')}: ${why}\n${logs.slice(-20).join('\n')}`));
    };
    const timer = setTimeout(() => fail(`no "ready" line within ${timeoutMs} ms`), timeoutMs);
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      buffered += chunk;
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        logs.push(line);
        if (settled) continue;
        let parsed: Record<string, unknown> | null = null;
        try {
          parsed = JSON.parse(line) as Record<string, unknown>;
        } catch {
          continue; // not a log line
        }
        if (parsed.event === 'ready') {
          settled = true;
          clearTimeout(timer);
          resolve({ child, ready: parsed, logs, stop, kill });
        }
      }
    });
    child.on('exit', (code, signal) => fail(`exited (${code ?? signal}) before it was ready`));
  });
}

/** Options of a test or benchmark memory server. */
export interface MemserverSpec {
  token: string;
  serverId?: number;
  /** Port to listen on (0 = any free port; the chosen one is in `port`). */
  port?: number;
  capacity?: string;
  dataDir?: string;
  /** Serve metrics on a free loopback port (its address is then in `metrics`); default off. */
  metrics?: boolean;
  extra?: string[];
}

/** Starts pd3-memserver on loopback; resolves with the daemon, its port and its metrics address
 *  ('' unless `spec.metrics`). */
export async function startMemserver(spec: MemserverSpec): Promise<Daemon & { port: number; metrics: string }> {
  const args = ['--listen', `127.0.0.1:${spec.port ?? 0}`, '--server-id', String(spec.serverId ?? 0),
    '--capacity', spec.capacity ?? '1G', '--metrics', spec.metrics ? '127.0.0.1:0' : 'off', '--log-level', 'info'];
  if (spec.dataDir) args.push('--data-dir', spec.dataDir);
  args.push(...(spec.extra ?? []));
  const d = await startDaemon(MEMSERVER_CLI, args, spec.token);
  return Object.assign(d, { port: Number(d.ready.port), metrics: spec.metrics ? String(d.ready.metrics) : '' });
}

/** Starts pd3-agent for `segment`; resolves once it is serving. */
export function startAgent(segment: string, servers: number[], token: string, extra: string[] = []): Promise<Daemon> {
  // Metrics off unless the caller asks for them (a flag may be given once).
  const metrics = extra.includes('--metrics') ? [] : ['--metrics', 'off'];
  const args = ['--segment', segment, '--servers', servers.map((p) => `127.0.0.1:${p}`).join(','),
    ...metrics, '--log-level', 'info', ...extra];
  return startDaemon(AGENT_CLI, args, token);
}

/** Parsed JSON log lines of a daemon whose `event` is `event`. */
export function logEvents(d: Daemon, event: string): Array<Record<string, unknown>> {
  const found: Array<Record<string, unknown>> = [];
  for (const line of d.logs) {
    try {
      const parsed = JSON.parse(line) as Record<string, unknown>;
      if (parsed.event === event) found.push(parsed);
    } catch {
      // not a JSON log line
    }
  }
  return found;
}

/** When (ms since the epoch) `d` first logged `event`, or null if it has not. */
export function firstLoggedAt(d: Daemon, event: string): number | null {
  const first = logEvents(d, event)[0];
  return first === undefined ? null : Date.parse(String(first.ts));
}
