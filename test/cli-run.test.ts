// cli-run.test.ts — the pd3-memserver and pd3-agent executables as users run them: --help,
// --version, refused flags and config (exit 2), and real processes: the "ready" line, /metrics and /healthz, a wrong token, a
// port in use, an agent round trip, and SIGTERM (exit 0); and the same two in-process through
// MemServer.start / Agent.start.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { constants as C, Pd3Host } from '../dist/host/index.js';
import { Agent, agentOptions, Logger } from '../dist/dpu/index.js';
import { MemServer, memServerOptions } from '../dist/memserver/index.js';
import { uniqueName } from './helpers.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const MEMSERVER = join(root, 'dist', 'memserver', 'cli.js');
const AGENT = join(root, 'dist', 'dpu', 'cli.js');
const WAIT_MS = 10_000;

const dir = mkdtempSync(join(tmpdir(), 'pd3-cli-run-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A parsed JSON log line. */
type LogLine = Record<string, unknown> & { level: string; event: string; msg: string; component: string };

/** A spawned CLI with its output collected. */
class Proc {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  readonly logs: LogLine[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private waiters: Array<() => void> = [];

  constructor(script: string, args: string[], env: NodeJS.ProcessEnv) {
    const base = { ...process.env };
    delete base.PD3_TOKEN;
    this.child = spawn(process.execPath, [script, ...args], {
      env: { ...base, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout!.setEncoding('utf8').on('data', (s: string) => {
      this.stdout += s;
    });
    let partial = '';
    this.child.stderr!.setEncoding('utf8').on('data', (s: string) => {
      this.stderr += s;
      partial += s;
      const lines = partial.split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        if (line.startsWith('{')) this.logs.push(JSON.parse(line) as LogLine);
      }
      for (const w of this.waiters) w();
    });
    this.exited = new Promise((resolve) => this.child.on('exit', (code, signal) => resolve({ code, signal })));
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The first log line matching `pred`; rejects after `ms` or when the process exits first. */
  waitFor(pred: (l: LogLine) => boolean, what: string, ms = WAIT_MS): Promise<LogLine> {
    return new Promise((resolve, reject) => {
      const check = (): boolean => {
        const found = this.logs.find(pred);
        if (found) {
          done();
          resolve(found);
        }
        return found !== undefined;
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`no ${what} within ${ms} ms; stderr:\n${this.stderr}`));
      }, ms);
      const onExit = (): void => {
        if (check()) return;
        done();
        reject(new Error(`exited before ${what}; stderr:\n${this.stderr}`));
      };
      const done = (): void => {
        clearTimeout(timer);
        this.waiters = this.waiters.filter((w) => w !== waiter);
        this.child.off('exit', onExit);
      };
      const waiter = (): void => void check();
      if (check()) return;
      this.waiters.push(waiter);
      this.child.on('exit', onExit);
    });
  }

  /** The exit, or a rejection after `ms`. */
  async exit(ms = WAIT_MS): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`still running after ${ms} ms; stderr:\n${this.stderr}`)), ms);
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

const procs: Proc[] = [];
const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const p of procs.splice(0)) {
    if (p.running) p.child.kill('SIGKILL');
    await p.exit(5000).catch(() => undefined);
  }
  const failures: unknown[] = [];
  while (cleanup.length > 0) {
    try {
      await cleanup.pop()!();
    } catch (e) {
      failures.push(e); // keep cleaning up; report the first failure below
    }
  }
  if (failures.length > 0) throw failures[0];
});

function run(script: string, args: string[], env: NodeJS.ProcessEnv = {}): Proc {
  const p = new Proc(script, args, env);
  procs.push(p);
  return p;
}

/** Runs to the end (for --help and refused flags). */
async function runToExit(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = run(script, args, env);
  const { code } = await p.exit();
  return { code, stdout: p.stdout, stderr: p.stderr };
}

async function get(address: string, path: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://${address}${path}`, { signal: AbortSignal.timeout(5000) });
  return { status: res.status, body: await res.text() };
}

/** A TCP listener on a free loopback port, to make a port "in use". */
async function occupyPort(): Promise<number> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(() => new Promise((resolve) => server.close(resolve)));
  return (server.address() as AddressInfo).port;
}

describe('--help, --version and refused command lines', () => {
  for (const [name, script, flags] of [
    [
      'pd3-memserver',
      MEMSERVER,
      ['--listen HOST:PORT', '--server-id N', '--token-file FILE', '--capacity SIZE', '--metrics'],
    ],
    [
      'pd3-agent',
      AGENT,
      ['--segment NAME', '--servers HOST:PORT', '--max-batch-records N', '--host-view on|off', '--metrics'],
    ],
  ] as const) {
    it(`${name} --help prints usage and exits 0`, async () => {
      const r = await runToExit(script, ['--help']);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^Usage: ${name} \\[--config FILE\\] \\[flags\\]`));
      for (const f of flags) expect(r.stdout).toContain(f);
      expect(r.stderr).toBe('');
    });

    it(`${name} --version prints the package version`, async () => {
      const r = await runToExit(script, ['--version']);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^${name} \\d+\\.\\d+\\.\\d+\\n$`));
    });

    it(`${name} refuses bad flags and config with exit 2 and one clear message`, async () => {
      const badJson = join(dir, `${name}-bad.json`);
      writeFileSync(badJson, '{"metrics": "127.0.0.1:0",');
      const unknownKey = join(dir, `${name}-unknown.json`);
      writeFileSync(unknownKey, '{"metircs": "off"}');
      const cases: Array<[string[], RegExp]> = [
        [['--bogus', '1'], /unknown flag --bogus/],
        [['--metrics', '127.0.0.1:99999', '--token', 't'], /--metrics: port must be a number from 0 to 65535/],
        [['--log-level', 'chatty', '--token', 't'], /--log-level: must be one of debug, info, warn, error/],
        [['--config', badJson], /--config .*-bad\.json: not valid JSON/],
        [['--config', unknownKey], /unknown key "metircs" \(did you mean "metrics"\?\)/],
        [['--config', join(dir, 'missing.json')], /cannot read it: ENOENT/],
      ];
      for (const [args, message] of cases) {
        const r = await runToExit(script, args);
        expect(r.code, args.join(' ')).toBe(2);
        expect(r.stderr).toMatch(new RegExp(`^${name}: `));
        expect(r.stderr).toMatch(message);
        expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
        expect(r.stdout).toBe('');
      }
    });
  }

  it('pd3-memserver refuses to start without a token', async () => {
    const r = await runToExit(MEMSERVER, ['--listen', '127.0.0.1:0']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no auth token: give --token-file FILE/);
  });

  it('pd3-agent refuses to start without a segment, servers or token', async () => {
    expect((await runToExit(AGENT, ['--servers', '127.0.0.1:1', '--token', 't'])).stderr).toMatch(
      /--segment .*is required/,
    );
    expect((await runToExit(AGENT, ['--segment', 's', '--token', 't'])).stderr).toMatch(/--servers .*is required/);
    const r = await runToExit(AGENT, ['--segment', 's', '--servers', '127.0.0.1:1']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no auth token/);
  });

  it('pd3-agent refuses bad capture settings with exit 2 naming the flag', async () => {
    const base = ['--segment', 's', '--servers', '127.0.0.1:1', '--token', 't', '--prefetch-parser', 'resp', '--app', '127.0.0.1:6379'];
    const cases: Array<[string[], RegExp]> = [
      [['--mirror-ring', 'v1'], /--mirror-ring: must be one of v2, v3, got "v1"/],
      [['--mirror-spin-us', '1001'], /--mirror-spin-us: must be from 0 to 1000, got 1001/],
      [['--mirror-spin-us', '-5'], /--mirror-spin-us: must be from 0 to 1000, got -5/],
      [['--mirror-spin-us', 'soon'], /--mirror-spin-us: must be a whole number from 0 to 1000, got "soon"/],
      [['--mirror-slice-us', '200000'], /--mirror-slice-us: must be from 0 to 100000, got 200000/],
      [['--mirror', 'tee', '--tee-listen', '127.0.0.1:0', '--mirror-spin-us', '10'], /--mirror-ring, --mirror-spin-us and --mirror-slice-us only apply with --mirror afpacket/],
    ];
    for (const [args, message] of cases) {
      const r = await runToExit(AGENT, [...base, ...args]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^pd3-agent: /);
      expect(r.stderr).toMatch(message);
      expect(r.stdout).toBe('');
    }
  });
});


/** Starts a pd3-memserver on free ports and waits for its ready line. */
async function startMemServer(extra: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<{ p: Proc; ready: LogLine }> {
  const p = run(MEMSERVER, ['--listen', '127.0.0.1:0', '--metrics', '127.0.0.1:0', '--capacity', '64M', ...extra], env);
  const ready = await p.waitFor((l) => l.event === 'ready', 'ready line');
  return { p, ready };
}

/** Sends a HELLO with `token` and returns the HELLO_REPLY's status (a pd3_status magnitude) and server id. */
function hello(port: number, token: string): Promise<{ status: number; serverId: number }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('no HELLO_REPLY within 5 s'));
    }, 5000);
    const tok = Buffer.from(token);
    // pd3_hello after the 24-byte frame header: magic u32, version u16, token_len u16, tenant_len u16,
    // reserved u16, then the token (and no tenant name: the default tenant).
    const frame = Buffer.alloc(24 + 12 + tok.length);
    frame.writeUInt32LE(frame.length, 0); // length
    frame.writeUInt16LE(1, 4); // PD3_FRAME_HELLO
    frame.writeUInt32LE(0x54334450, 24); // PD3_TRANSPORT_MAGIC
    frame.writeUInt16LE(C.TRANSPORT_VERSION, 28);
    frame.writeUInt16LE(tok.length, 30);
    tok.copy(frame, 36);
    let got = Buffer.alloc(0);
    socket.on('connect', () => socket.write(frame));
    socket.on('data', (d) => {
      got = Buffer.concat([got, d]);
      if (got.length < 24 + 32) return;
      clearTimeout(timer);
      socket.destroy();
      expect(got.readUInt16LE(4)).toBe(2); // PD3_FRAME_HELLO_REPLY
      // pd3_hello_reply after the 24-byte frame header: magic u32, version u16, status u16, server_id u16
      resolve({ status: got.readUInt16LE(24 + 6), serverId: got.readUInt16LE(24 + 8) });
    });
    socket.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

describe('a real pd3-memserver', () => {
  it(
    'starts, logs ready first, serves /metrics and /healthz, and stops on SIGTERM with exit 0',
    async () => {
      const { p, ready } = await startMemServer(['--server-id', '5'], { PD3_TOKEN: 'secret' });
      expect(p.logs[0]).toBe(ready);
      expect(ready).toMatchObject({ level: 'info', component: 'memserver', serverId: 5 });
      expect(new Date(ready.ts as string).toISOString()).toBe(ready.ts);
      const port = ready.port as number;
      expect(port).toBeGreaterThan(0);
      expect(ready.listen).toBe(`127.0.0.1:${port}`);
      expect(ready.metrics).toMatch(/^127\.0\.0\.1:\d+$/);

      expect(await hello(port, 'secret')).toEqual({ status: 0, serverId: 5 });
      expect(await hello(port, 'wrong')).toMatchObject({ status: -C.status.PD3_E_AUTH! });

      const metrics = await get(ready.metrics as string, '/metrics');
      expect(metrics.status).toBe(200);
      expect(metrics.body).toMatch(/^# HELP pd3_memserver_/m);
      expect(metrics.body).toMatch(/^# TYPE pd3_memserver_batch_records histogram$/m);
      expect(metrics.body).toMatch(/^pd3_memserver_batch_records_bucket\{le="\+Inf"\} \d+$/m);
      expect(metrics.body).toMatch(/^pd3_memserver_auth_failures_total 1$/m);
      expect(metrics.body).toMatch(/^pd3_memserver_capacity_bytes 67108864$/m);
      expect(await get(ready.metrics as string, '/healthz')).toEqual({ status: 200, body: 'ok\n' });

      p.child.kill('SIGTERM');
      expect(await p.exit()).toEqual({ code: 0, signal: null });
      expect(p.logs.find((l) => l.event === 'stopping')).toMatchObject({ level: 'info', signal: 'SIGTERM' });
      expect(p.logs.at(-1)).toMatchObject({ event: 'stopped' });
      for (const l of p.logs) expect(l.component).toBe('memserver');
    },
  );

  it('reads a config file and a token file; SIGINT stops it too', async () => {
    const tokenFile = join(dir, 'ms-token');
    writeFileSync(tokenFile, 'from-file\n', { mode: 0o600 });
    const cfg = join(dir, 'ms.json');
    writeFileSync(
      cfg,
      JSON.stringify({ listen: '127.0.0.1:0', serverId: 2, tokenFile: 'ms-token', metrics: 'off', logLevel: 'warn' }),
    );
    const p = run(MEMSERVER, ['--config', cfg, '--log-level', 'info']);
    const ready = await p.waitFor((l) => l.event === 'ready', 'ready line');
    expect(ready.metrics).toBeNull();
    expect(await hello(ready.port as number, 'from-file')).toEqual({ status: 0, serverId: 2 });
    p.child.kill('SIGINT');
    expect((await p.exit()).code).toBe(0);
  });

  it('fails with exit 1 and a clear message when its port is in use', async () => {
    const port = await occupyPort();
    const p = run(MEMSERVER, ['--listen', `127.0.0.1:${port}`, '--token', 't', '--metrics', 'off']);
    expect((await p.exit()).code).toBe(1);
    const failed = p.logs.find((l) => l.event === 'start.failed');
    expect(failed).toMatchObject({ level: 'error', component: 'memserver' });
    expect(failed!.msg).toMatch(/cannot start: .*(in use|EADDRINUSE)/i);
    expect(p.stderr).not.toMatch(/\n\s+at /);
  });

  it(
    'fails with exit 1 when its metrics port is in use, naming the metrics endpoint',
    async () => {
      const port = await occupyPort();
      const p = run(MEMSERVER, ['--listen', '127.0.0.1:0', '--token', 't', '--metrics', `127.0.0.1:${port}`]);
      expect((await p.exit()).code).toBe(1);
      expect(p.logs.find((l) => l.event === 'start.failed')!.msg).toMatch(
        new RegExp(`metrics endpoint 127\\.0\\.0\\.1:${port}: cannot listen: .*EADDRINUSE`),
      );
    },
  );
});

describe('a real pd3-agent', () => {
  it('serves a host segment through a memory server, with metrics, and stops on SIGTERM', async () => {
    const { ready: server } = await startMemServer([], { PD3_TOKEN: 'tok' });
    const host = Pd3Host.create({ name: uniqueName('cli') });
    cleanup.push(() => host.close());
    const agent = run(
      AGENT,
      ['--segment', host.name, '--servers', server.listen as string, '--metrics', '127.0.0.1:0'],
      { PD3_TOKEN: 'tok' },
    );
    const ready = await agent.waitFor((l) => l.event === 'ready', 'agent ready line');
    expect(agent.logs[0]).toBe(ready);
    expect(ready).toMatchObject({ component: 'agent', segment: host.name, servers: [server.listen] });

    const { region } = await host.allocate(4096);
    await host.write(region, 10, Buffer.from('hello'));
    expect(Buffer.from(await host.read(region, 10, 5)).toString()).toBe('hello');

    const metrics = (await get(ready.metrics as string, '/metrics')).body;
    expect(metrics).toContain(`pd3_agent_server_connected{server="${server.listen as string}"} 1`);
    expect(metrics).toMatch(/^pd3_agent_records_total [3-9]\d*$/m);
    expect(metrics).toMatch(/^# TYPE pd3_agent_servers_up gauge$/m);

    agent.child.kill('SIGTERM');
    expect(await agent.exit()).toEqual({ code: 0, signal: null });
    expect(agent.logs.some((l) => l.event === 'stopping')).toBe(true);
  });

  it('fails with exit 1 and a clear message for a segment that does not exist', async () => {
    const p = run(AGENT, [
      '--segment',
      uniqueName('absent'),
      '--servers',
      '127.0.0.1:1',
      '--token',
      't',
      '--metrics',
      'off',
    ]);
    expect((await p.exit()).code).toBe(1);
    expect(p.logs.find((l) => l.event === 'start.failed')).toMatchObject({ level: 'error', component: 'agent' });
    expect(p.stderr).not.toMatch(/\n\s+at /);
  });
});

describe('MemServer and Agent in-process', () => {
  it('serve a host, report stats and metrics, forward native logs, close', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const capture = (component: string): Logger =>
      new Logger(component, 'debug', (l) => lines.push(JSON.parse(l) as Record<string, unknown>));
    const server = await MemServer.start(
      memServerOptions({ listen: '127.0.0.1:0', token: 'k', capacity: '16M', metrics: 'off', serverId: 3 }, {}),
      capture('memserver'),
    );
    cleanup.push(() => server.close());
    expect(server.port).toBeGreaterThan(0);
    expect(server.metricsAddress).toBeNull();
    expect(lines[0]).toMatchObject({ component: 'memserver', event: 'ready', port: server.port, serverId: 3 });

    const host = Pd3Host.create({ name: uniqueName('inproc') });
    cleanup.push(() => host.close());
    const agent = await Agent.start(
      agentOptions(
        { segment: host.name, servers: [`127.0.0.1:${server.port}`], token: 'k', metrics: '127.0.0.1:0' },
        {},
      ),
      capture('agent'),
    );
    cleanup.push(() => agent.close());
    expect(lines.find((l) => l.component === 'agent')).toMatchObject({ event: 'ready', segment: host.name });

    const { region } = await host.allocate(4096);
    expect(region >>> 16).toBe(3); // the server id is the region id's top 16 bits
    await host.write(region, 0, Buffer.from('in-process'));
    expect(Buffer.from(await host.read(region, 0, 10)).toString()).toBe('in-process');

    expect(server.stats()).toMatchObject({ writes: 1, reads: 1, controls: 1, regions: 1 });
    expect(server.metrics()).toMatch(/^pd3_memserver_requests_total\{op="write"\} 1$/m);
    expect(agent.servers()).toMatchObject([{ endpoint: `127.0.0.1:${server.port}`, connected: true, serverId: 3 }]);
    expect(agent.stats().records).toBeGreaterThanOrEqual(3);
    const scraped = await fetch(`http://127.0.0.1:${agent.metricsAddress!.port}/metrics`, {
      signal: AbortSignal.timeout(5000),
    });
    expect(await scraped.text()).toMatch(/^pd3_agent_responses_total [3-9]\d*$/m);

    // The native server's own events arrive through the ~100 ms log pump, after "ready".
    const deadline = Date.now() + 5000;
    while (!lines.some((l) => l.component === 'memserver' && l.event === 'server.listen') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(lines.some((l) => l.component === 'memserver' && l.event === 'server.listen')).toBe(true);

    await agent.close();
    await agent.close(); // idempotent
    expect(() => agent.stats()).toThrow(/agent closed/);
    await server.close();
    expect(() => server.metrics()).toThrow(/memory server closed/);
    // The server's last event is forwarded by close().
    expect(lines.some((l) => l.component === 'memserver' && l.event === 'server.stop')).toBe(true);
  });
});

describe('a real pd3-agent through the DMA latency model', () => {
  it('serves the host with --dma-latency-us and counts its host-memory operations in /metrics', async () => {
    const { ready: server } = await startMemServer([], { PD3_TOKEN: 'tok' });
    const host = Pd3Host.create({ name: uniqueName('cli-dma') });
    cleanup.push(() => host.close());
    const agent = run(
      AGENT,
      ['--segment', host.name, '--servers', server.listen as string, '--metrics', '127.0.0.1:0', '--dma-latency-us', '0.5'],
      { PD3_TOKEN: 'tok' },
    );
    const ready = await agent.waitFor((l) => l.event === 'ready', 'agent ready line');
    const { region } = await host.allocate(4096);
    await host.write(region, 10, Buffer.from('modelled'));
    expect(Buffer.from(await host.read(region, 10, 8)).toString()).toBe('modelled');
    const metrics = (await get(ready.metrics as string, '/metrics')).body;
    for (const kind of ['read', 'write', 'fence']) {
      const m = new RegExp(`^pd3_agent_dma_operations_total\\{kind="${kind}"\\} (\\d+)$`, 'm').exec(metrics);
      expect(Number(m?.[1]), kind).toBeGreaterThan(0);
    }
    expect(metrics).toMatch(/^pd3_agent_dma_bytes_total\{kind="write"\} [1-9]\d*$/m);
    expect(metrics).toMatch(/^pd3_agent_dma_wait_nanoseconds_total [1-9]\d*$/m);
    agent.child.kill('SIGTERM');
    expect(await agent.exit()).toEqual({ code: 0, signal: null });
  });

  it('refuses a DMA latency outside 0..1000 µs with exit 2 naming the flag', async () => {
    for (const bad of ['1001', 'fast', '-0.5']) {
      const r = await runToExit(AGENT, ['--segment', 's', '--servers', '127.0.0.1:1', '--token', 't', `--dma-latency-us=${bad}`]);
      expect(r.code, bad).toBe(2);
      expect(r.stderr).toMatch(/^pd3-agent: --dma-latency-us: must be a number from 0 to 1000 \(fractions allowed, such as 0\.5\), got /);
    }
  });
});
