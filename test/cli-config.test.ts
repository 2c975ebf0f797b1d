// cli-config.test.ts — pd3-memserver / pd3-agent settings: flags, config files, sizes, endpoints,
// token sources and defaults; every bad input refused with a UsageError naming the flag or key.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseArgv } from '../dist/cli/argv.js';
import { agentHelp, agentOptions, AGENT_SETTINGS, parseAgentCommand } from '../dist/dpu/agent-config.js';
import { parseEndpoint } from '../dist/cli/endpoint.js';
import {
  memServerHelp,
  memServerOptions,
  MEMSERVER_SETTINGS,
  parseMemServerCommand,
  type MemServerOptions,
} from '../dist/memserver/config.js';
import { integerOr } from '../dist/cli/settings.js';
import { formatSize, parseSize } from '../dist/cli/sizes.js';
import { UsageError } from '../dist/cli/usage-error.js';

const dir = mkdtempSync(join(tmpdir(), 'pd3-cli-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let fileCounter = 0;
/** Writes `content` (an object as JSON, or raw text) to a fresh file and returns its path. */
function file(content: unknown, name = `f${fileCounter++}.json`): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

/** The message of the UsageError `fn` throws (fails if it throws anything else or nothing). */
function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(UsageError);
    return (e as Error).message;
  }
  throw new Error('expected a UsageError, nothing was thrown');
}

function memserver(argv: string[], env: NodeJS.ProcessEnv = {}): MemServerOptions {
  const c = parseMemServerCommand(argv, env);
  if (c.kind !== 'run') throw new Error(`expected run, got ${c.kind}`);
  return c.options;
}

describe('sizes', () => {
  it('parses bytes and binary units', () => {
    expect(parseSize('4096')).toBe(4096);
    expect(parseSize('512M')).toBe(512 * 2 ** 20);
    expect(parseSize('4G')).toBe(4 * 2 ** 30);
    expect(parseSize('4g')).toBe(4 * 2 ** 30);
    expect(parseSize('64KiB')).toBe(65536);
    expect(parseSize('64KB')).toBe(65536);
    expect(parseSize('2T')).toBe(2 * 2 ** 40);
    expect(parseSize('1.5G')).toBe(1.5 * 2 ** 30);
    expect(parseSize('0.5K')).toBe(512);
    expect(parseSize(' 8 M ')).toBe(8 * 2 ** 20);
  });

  it('refuses malformed sizes', () => {
    for (const bad of ['', 'M', '-1', '12Q', '1.1', '0.3K', '1e3', '0x10', '4 G B', '9999999999T']) {
      expect(() => parseSize(bad), bad).toThrow();
    }
  });

  it('formats with the largest exact unit', () => {
    expect(formatSize(4 * 2 ** 30)).toBe('4G');
    expect(formatSize(1536)).toBe('1536');
    expect(formatSize(3 * 2 ** 20)).toBe('3M');
  });
});

describe('a number or a word (integerOr)', () => {
  const s = integerOr('auto', 0, 1000, { flag: 'wait-us', help: 'h' });
  it('takes the word or a whole number in range, from a flag and from JSON', () => {
    expect(s.arg).toBe('auto|N');
    expect(s.fromText('auto')).toBe('auto');
    expect(s.fromText('0')).toBe(0);
    expect(s.fromText('1000')).toBe(1000);
    expect(s.fromJson('auto', '/')).toBe('auto');
    expect(s.fromJson(250, '/')).toBe(250);
  });
  it('refuses anything else, saying what it takes', () => {
    for (const bad of ['Auto', 'automatic', '', '1.5', '1001', '-1', '0x10']) expect(() => s.fromText(bad), bad).toThrow(/must be/);
    expect(() => s.fromText('soon')).toThrow('must be auto or a whole number from 0 to 1000, got "soon"');
    expect(() => s.fromJson('soon', '/')).toThrow(/must be auto or a whole number from 0 to 1000, got a string/);
    expect(() => s.fromJson(null, '/')).toThrow(/got null/);
    expect(() => s.fromJson(2.5, '/')).toThrow(/must be a whole number from 0 to 1000/);
    expect(() => s.fromJson(5000, '/')).toThrow(/must be from 0 to 1000, got 5000/);
  });
});

describe('endpoints', () => {
  it('parses HOST:PORT', () => {
    expect(parseEndpoint('127.0.0.1:7400', { anyPort: false, ipv4Only: true })).toEqual({
      host: '127.0.0.1',
      port: 7400,
    });
    expect(parseEndpoint('mem-1.example:9', { anyPort: false, ipv4Only: false })).toEqual({
      host: 'mem-1.example',
      port: 9,
    });
    expect(parseEndpoint('0.0.0.0:0', { anyPort: true, ipv4Only: true })).toEqual({ host: '0.0.0.0', port: 0 });
  });

  it('refuses malformed endpoints', () => {
    const rules = { anyPort: false, ipv4Only: false };
    for (const bad of [
      '',
      '127.0.0.1',
      ':80',
      '127.0.0.1:',
      'h:0',
      'h:65536',
      'h:8x',
      'bad host:80',
      '1.2.3.256:80',
      'a..b:1',
      '-h:1',
    ]) {
      expect(() => parseEndpoint(bad, rules), bad).toThrow();
    }
    expect(() => parseEndpoint('localhost:80', { anyPort: false, ipv4Only: true })).toThrow(/IPv4/);
  });
});

describe('command line', () => {
  const known = new Set(['listen', 'token']);

  it('takes --flag value and --flag=value, --help and --version', () => {
    const p = parseArgv(['--listen', '1.2.3.4:5', '--token=a=b', '-h'], known);
    expect([...p.values]).toEqual([
      ['listen', '1.2.3.4:5'],
      ['token', 'a=b'],
    ]);
    expect(p.help).toBe(true);
    expect(parseArgv(['--version'], known).version).toBe(true);
  });

  it('refuses unknown, valueless, repeated and positional arguments', () => {
    expect(refusal(() => parseArgv(['--lisen', 'x'], known))).toMatch(
      /unknown flag --lisen \(did you mean --listen\?\)/,
    );
    expect(refusal(() => parseArgv(['--listen'], known))).toMatch(/--listen needs a value/);
    expect(refusal(() => parseArgv(['--listen', '--token', 'x'], known))).toMatch(/--listen needs a value/);
    expect(refusal(() => parseArgv(['--token', 'a', '--token', 'b'], known))).toMatch(
      /--token is given more than once/,
    );
    expect(refusal(() => parseArgv(['serve'], known))).toMatch(/unexpected argument "serve"/);
    expect(refusal(() => parseArgv(['--help=yes'], known))).toMatch(/--help takes no value/);
  });

  it('answers --help and --version before building options', () => {
    expect(parseMemServerCommand(['--help'], {})).toEqual({ kind: 'help' });
    expect(parseAgentCommand(['--version'], {})).toEqual({ kind: 'version' });
  });
});

describe('pd3-memserver settings', () => {
  it('has production defaults', () => {
    expect(memserver(['--token', 't'])).toEqual({
      listen: { host: '127.0.0.1', port: 7400 },
      serverId: 0,
      token: 't',
      headroom: 0.15,
      giveBack: true,
      sync: 'batch',
      metrics: { host: '127.0.0.1', port: 0 },
      logLevel: 'info',
    });
  });

  it('reads every flag', () => {
    const o = memserver([
      '--listen=0.0.0.0:0',
      '--server-id',
      '40000',
      '--token',
      't',
      '--capacity',
      '4G',
      '--headroom',
      '0.2',
      '--data-dir',
      dir,
      '--sync',
      'none',
      '--max-frame',
      '1M',
      '--max-connections',
      '8',
      '--warm-ahead',
      '0',
      '--index-initial-keys',
      '1000',
      '--give-back',
      'off',
      '--meminfo',
      join(dir, 'meminfo'),
      '--pressure-check-ms',
      '250',
      '--metrics',
      'off',
      '--log-level',
      'debug',
    ]);
    expect(o).toEqual({
      listen: { host: '0.0.0.0', port: 0 },
      serverId: 40000,
      token: 't',
      capacity: 4 * 2 ** 30,
      headroom: 0.2,
      giveBack: false,
      meminfo: join(dir, 'meminfo'),
      pressureCheckMs: 250,
      dataDir: dir,
      sync: 'none',
      maxFrame: 2 ** 20,
      maxConnections: 8,
      warmAhead: 0,
      indexInitialKeys: 1000,
      metrics: null,
      logLevel: 'debug',
    });
  });

  it('reads a config file; flags override it; relative paths are from the file', () => {
    const cfg = file({
      listen: '127.0.0.1:9000',
      serverId: 3,
      capacity: '1G',
      maxFrame: 65536,
      dataDir: 'data',
      token: 'f',
    });
    const o = memserver(['--config', cfg, '--server-id', '4']);
    expect(o.listen).toEqual({ host: '127.0.0.1', port: 9000 });
    expect(o.serverId).toBe(4);
    expect(o.capacity).toBe(2 ** 30);
    expect(o.maxFrame).toBe(65536);
    expect(o.dataDir).toBe(join(dir, 'data'));
  });

  it('refuses each bad config file value, naming the key', () => {
    const cases: Array<[object, RegExp]> = [
      [{ lisen: '127.0.0.1:1' }, /unknown key "lisen" \(did you mean "listen"\?\)/],
      [{ serverId: '3' }, /key "serverId": must be a whole number from 0 to 65535, got a string/],
      [{ serverId: 65536 }, /key "serverId": must be from 0 to 65535, got 65536/],
      [{ serverId: 1.5 }, /key "serverId": must be a whole number/],
      [{ headroom: 1 }, /key "headroom": must be at least 0 and below 1, got 1/],
      [{ headroom: '0.1' }, /key "headroom": must be a decimal number/],
      [{ capacity: '12Q' }, /key "capacity": unknown size unit "Q"/],
      [{ capacity: -1 }, /key "capacity": must be from 4K to 1024T, got -1/],
      [{ capacity: 1.5 }, /key "capacity": must be a size/],
      [{ capacity: true }, /key "capacity": must be a size .* got a boolean/],
      [{ maxFrame: '2G' }, /key "maxFrame": must be from 4K to 1G/],
      [{ listen: '127.0.0.1' }, /key "listen": expected HOST:PORT/],
      [{ listen: '127.0.0.1:70000' }, /key "listen": port must be a number from 0 to 65535/],
      [{ listen: 'localhost:7400' }, /key "listen": host must be an IPv4 address/],
      [{ listen: 7400 }, /key "listen": must be a "HOST:PORT" string, got a number/],
      [{ metrics: 'on' }, /key "metrics": expected HOST:PORT/],
      [{ sync: 'always' }, /key "sync": must be one of none, batch, got a string \("always"\)/],
      [{ logLevel: 'trace' }, /key "logLevel": must be one of debug, info, warn, error/],
      [{ maxConnections: 0 }, /key "maxConnections": must be from 1 to 65536, got 0/],
      [{ warmAhead: 257 }, /key "warmAhead": must be from 0 to 256, got 257/],
      [{ warmAhead: '8' }, /key "warmAhead": must be a whole number from 0 to 256, got a string/],
      [{ token: '' }, /key "token": must not be empty/],
      [{ token: 'x'.repeat(257) }, /key "token": must be at most 256 bytes, got 257/],
      [{ dataDir: 5 }, /key "dataDir": must be a path string/],
      [{ tokenFile: null }, /key "tokenFile": must be a path string, got null/],
    ];
    for (const [content, message] of cases) {
      const path = file(content);
      expect(
        refusal(() => parseMemServerCommand(['--config', path, '--token', 't'], {})),
        JSON.stringify(content),
      ).toMatch(message);
      expect(refusal(() => parseMemServerCommand(['--config', path, '--token', 't'], {}))).toContain(
        `config file ${path}`,
      );
    }
  });

  it('refuses each bad flag value, naming the flag', () => {
    const cases: Array<[string[], RegExp]> = [
      [['--server-id', '65536'], /^--server-id: must be from 0 to 65535, got 65536/],
      [['--server-id', '-1'], /^--server-id: must be from 0 to 65535, got -1/],
      [['--server-id', '2x'], /^--server-id: must be a whole number/],
      [['--capacity', '4X'], /^--capacity: unknown size unit "X"/],
      [['--capacity', '0'], /^--capacity: must be from 4K/],
      [['--headroom', 'lots'], /^--headroom: must be a decimal number/],
      [['--listen', 'nowhere'], /^--listen: expected HOST:PORT/],
      [['--metrics', '127.0.0.1:99999'], /^--metrics: port must be a number/],
      [['--sync', 'fsync'], /^--sync: must be one of none, batch/],
      [['--log-level', 'loud'], /^--log-level: must be one of debug, info, warn, error/],
      [['--data-dir', ''], /^--data-dir: must not be empty/],
      [['--warm-ahead', '257'], /^--warm-ahead: must be from 0 to 256, got 257/],
      [['--warm-ahead', '-1'], /^--warm-ahead: must be from 0 to 256, got -1/],
      [['--warm-ahead', '1.5'], /^--warm-ahead: must be a whole number/],
    ];
    for (const [argv, message] of cases) {
      expect(
        refusal(() => parseMemServerCommand([...argv, '--token', 't'], {})),
        argv.join(' '),
      ).toMatch(message);
    }
  });

  it('refuses unreadable and malformed config files', () => {
    expect(refusal(() => parseMemServerCommand(['--config', join(dir, 'missing.json')], {}))).toMatch(
      /--config .*missing\.json: cannot read it: ENOENT/,
    );
    expect(refusal(() => parseMemServerCommand(['--config', dir], {}))).toMatch(/cannot read it: EISDIR/);
    expect(refusal(() => parseMemServerCommand(['--config', file('{"listen": ')], {}))).toMatch(/not valid JSON/);
    expect(refusal(() => parseMemServerCommand(['--config', file('')], {}))).toMatch(/not valid JSON/);
    expect(refusal(() => parseMemServerCommand(['--config', file('[1,2]')], {}))).toMatch(
      /must hold one JSON object of settings, got an array/,
    );
    expect(refusal(() => parseMemServerCommand(['--config', file('42')], {}))).toMatch(
      /must hold one JSON object of settings, got 42/,
    );
    if (process.getuid?.() !== 0) {
      const locked = file({ token: 't' });
      chmodSync(locked, 0);
      expect(refusal(() => parseMemServerCommand(['--config', locked], {}))).toMatch(/cannot read it: EACCES/);
    }
  });

  it('checks settings given in code like a config file', () => {
    const o = memServerOptions({ listen: '127.0.0.1:0', token: 'x', metrics: 'off', capacity: '64M' }, {});
    expect(o.listen).toEqual({ host: '127.0.0.1', port: 0 });
    expect(o.metrics).toBeNull();
    expect(o.capacity).toBe(64 * 2 ** 20);
    expect(memServerOptions({ serverId: 65535, token: 'x' }, {}).serverId).toBe(65535);
    expect(refusal(() => memServerOptions({ serverId: 65536, token: 'x' }, {}))).toMatch(
      /^options, key "serverId": must be from 0 to 65535, got 65536/,
    );
    expect(refusal(() => memServerOptions({ bogus: 1 } as object, {}))).toMatch(/^options: unknown key "bogus"/);
  });
});

describe('auth token', () => {
  it('is required', () => {
    expect(refusal(() => parseMemServerCommand([], {}))).toMatch(
      /no auth token: give --token-file FILE .* or set PD3_TOKEN/,
    );
    expect(refusal(() => parseAgentCommand(['--segment', 's', '--servers', 'h:1'], {}))).toMatch(/no auth token/);
  });

  it('comes from --token, else --token-file, else the config file, else PD3_TOKEN', () => {
    const tokenFile = file('from-file\n', 'token.txt');
    const cfg = file({ token: 'from-config' });
    const env = { PD3_TOKEN: 'from-env' };
    expect(memserver(['--token', 'from-flag', '--config', cfg], env).token).toBe('from-flag');
    expect(memserver(['--token-file', tokenFile, '--config', cfg], env).token).toBe('from-file');
    expect(memserver(['--config', cfg], env).token).toBe('from-config');
    expect(memserver(['--config', file({ tokenFile: 'token.txt' })], env).token).toBe('from-file');
    expect(memserver([], env).token).toBe('from-env');
  });

  it('keeps inner whitespace and drops only trailing line breaks of a token file', () => {
    expect(memserver(['--token-file', file(' a b \r\n\n', 'ws.txt')]).token).toBe(' a b ');
  });

  it('refuses ambiguous, empty, oversized and unreadable tokens', () => {
    const f = file('x', 'one.txt');
    expect(refusal(() => memserver(['--token', 'a', '--token-file', f]))).toMatch(
      /either --token or --token-file, not both/,
    );
    expect(refusal(() => memserver(['--config', file({ token: 'a', tokenFile: f })]))).toMatch(
      /either "token" or "tokenFile", not both/,
    );
    expect(refusal(() => memserver(['--token-file', file('\n', 'empty.txt')]))).toMatch(
      /--token-file .*empty\.txt: the token is empty/,
    );
    expect(refusal(() => memserver(['--token-file', file('y'.repeat(300), 'big.txt')]))).toMatch(
      /300 bytes, at most 256/,
    );
    expect(refusal(() => memserver(['--token-file', join(dir, 'absent.txt')]))).toMatch(
      /--token-file .*absent\.txt: cannot read it: ENOENT/,
    );
    expect(refusal(() => memserver(['--token', ''], {}))).toMatch(/^--token: must not be empty/);
    expect(refusal(() => memserver([], { PD3_TOKEN: '' }))).toMatch(/PD3_TOKEN: the token is empty/);
  });
});

describe('pd3-agent settings', () => {
  const base = ['--segment', 'kv', '--servers', '127.0.0.1:7400', '--token', 't'];

  it('needs a segment and servers, and has defaults', () => {
    expect(refusal(() => parseAgentCommand(['--servers', 'h:1', '--token', 't'], {}))).toMatch(
      /--segment .* is required/,
    );
    expect(refusal(() => parseAgentCommand(['--segment', 's', '--token', 't'], {}))).toMatch(
      /--servers .* is required/,
    );
    const c = parseAgentCommand(base, {});
    expect(c).toEqual({
      kind: 'run',
      options: {
        segment: 'kv',
        servers: [{ host: '127.0.0.1', port: 7400 }],
        token: 't',
        hostView: true,
        metrics: { host: '127.0.0.1', port: 0 },
        logLevel: 'info',
      },
    });
  });

  it('reads every flag', () => {
    const c = parseAgentCommand(
      [
        ...base.slice(0, 2),
        '--servers',
        'a:1,b.example:2',
        '--token',
        't',
        '--max-batch-records',
        '64',
        '--max-batch-bytes',
        '256K',
        '--batch-delay-us',
        '5',
        '--max-outstanding',
        '4',
        '--response-buffer',
        '32M',
        '--request-timeout-ms',
        '100',
        '--connect-timeout-ms',
        '50',
        '--reconnect-ms',
        '10',
        '--idle-spin-us',
        '0',
        '--dma-latency-us',
        '1.5',
        '--idle-sleep-us',
        '100',
        '--placement',
        'random',
        '--refraction-ms',
        '250',
        '--host-view',
        'off',
        '--host-view-capacity',
        '1000',
        '--host-view-shards',
        '2',
        '--host-view-spin-us',
        '20',
        '--metrics',
        '0.0.0.0:9100',
        '--log-level',
        'warn',
      ],
      {},
    );
    expect(c.kind === 'run' && c.options).toEqual({
      segment: 'kv',
      servers: [
        { host: 'a', port: 1 },
        { host: 'b.example', port: 2 },
      ],
      token: 't',
      maxBatchRecords: 64,
      maxBatchBytes: 256 * 1024,
      batchDelayUs: 5,
      maxOutstanding: 4,
      responseBuffer: 32 * 2 ** 20,
      requestTimeoutMs: 100,
      connectTimeoutMs: 50,
      reconnectMs: 10,
      idleSpinUs: 0,
      dmaLatencyUs: 1.5,
      idleSleepUs: 100,
      placement: 'random',
      refractionMs: 250,
      hostView: false,
      hostViewCapacity: 1000,
      hostViewShards: 2,
      hostViewSpinUs: 20,
      metrics: { host: '0.0.0.0', port: 9100 },
      logLevel: 'warn',
    });
  });

  it('takes its servers from --servers or from the pool in etcd, not both', () => {
    const pooled = parseAgentCommand(['--segment', 'kv', '--token', 't', '--etcd', 'http://e1:2379', '--etcd-prefix', '/p'], {});
    expect(pooled.kind === 'run' && pooled.options).toMatchObject({ servers: [], pool: { endpoints: ['http://e1:2379'], prefix: '/p' } });
    const defaultPrefix = parseAgentCommand(['--segment', 'kv', '--token', 't', '--etcd', 'http://e1:2379'], {});
    expect(defaultPrefix.kind === 'run' && defaultPrefix.options.pool).toEqual({ endpoints: ['http://e1:2379'], prefix: '/pd3' });
    expect(refusal(() => parseAgentCommand([...base, '--etcd', 'http://e1:2379'], {}))).toBe('give the memory servers by --servers or by --etcd, not both');
    expect(refusal(() => parseAgentCommand([...base, '--etcd-prefix', '/p'], {}))).toBe('--etcd-prefix needs --etcd');
    expect(refusal(() => parseAgentCommand(['--segment', 'kv', '--token', 't', '--etcd', 'e1:2379'], {}))).toMatch(/^--etcd: /);
  });

  it('takes a DMA latency of 0 to 1000 µs, fractions allowed, and refuses anything else with the range', () => {
    for (const [text, us] of [['0', 0], ['0.5', 0.5], ['2', 2], ['1000', 1000], ['.25', 0.25]] as const) {
      const c = parseAgentCommand([...base, '--dma-latency-us', text], {});
      expect(c.kind === 'run' && c.options.dmaLatencyUs, text).toBe(us);
    }
    const absent = parseAgentCommand(base, {});
    expect(absent.kind === 'run' && absent.options.dmaLatencyUs).toBeUndefined();
    for (const bad of ['-1', '1000.5', '1e3', 'abc', '', '2us', 'NaN', '0x10', '1.']) {
      expect(refusal(() => parseAgentCommand([...base, `--dma-latency-us=${bad}`], {})), bad).toBe(
        `--dma-latency-us: must be a number from 0 to 1000 (fractions allowed, such as 0.5), got ${bad === '1000.5' ? bad : `"${bad}"`}`,
      );
    }
  });

  it('refuses a placement policy it does not know and a negative refraction, naming the flag', () => {
    expect(refusal(() => parseAgentCommand([...base, '--placement', 'best-fit'], {}))).toMatch(/^--placement: /);
    expect(refusal(() => parseAgentCommand([...base, '--refraction-ms', '-1'], {}))).toMatch(/^--refraction-ms: /);
    expect(refusal(() => agentOptions({ segment: 's', servers: 'h:1', token: 't', placement: 'P2C' as 'p2c' }, {}))).toMatch(/placement/);
  });

  it('reads the --dpdk-* settings of --mirror dpdk and refuses each bad one, naming it', () => {
    const dpdk = ['--prefetch-parser', 'resp', '--app', '10.0.0.1:6379', '--mirror', 'dpdk'];
    const parsed = parseAgentCommand([...base, ...dpdk, '--dpdk-args=--no-huge  -m 256 --vdev=net_af_packet0,iface=m1',
      '--dpdk-port', 'net_af_packet0', '--dpdk-mbufs', '2047', '--dpdk-mbuf-bytes', '32K', '--dpdk-burst', '64',
      '--dpdk-spin-us', '0', '--dpdk-sleep-us', '2', '--dpdk-sleep-max-us', '500', '--dpdk-promiscuous', 'off'], {});
    expect(parsed.kind === 'run' && parsed.options.prefetch).toEqual({
      parser: 'resp',
      mirror: 'dpdk',
      app: { host: '10.0.0.1', port: 6379 },
      interface: 'lo',
      dpdk: { ealArgs: '--no-huge  -m 256 --vdev=net_af_packet0,iface=m1', port: 'net_af_packet0', mbufs: 2047, mbufBytes: 32768,
        burst: 64, spinUs: 0, sleepMinUs: 2, sleepMaxUs: 500, promiscuous: false },
      issuer: 'agent',
    });
    const defaults = parseAgentCommand([...base, ...dpdk], {});
    expect(defaults.kind === 'run' && defaults.options.prefetch?.dpdk).toEqual({ ealArgs: '', port: '0' });
    for (const [flags, message] of [
      [['--dpdk-port', 'net_af_packet0'], /^the --dpdk-\* settings only apply with --mirror dpdk/],
    ] as const) {
      expect(refusal(() => parseAgentCommand([...base, '--prefetch-parser', 'resp', '--app', '127.0.0.1:1', ...flags], {}))).toMatch(message);
    }
    for (const [flags, message] of [
      [['--dpdk-args', '--no-huge'], /--dpdk-args needs a value/],
      [['--dpdk-mbufs', '100'], /^--dpdk-mbufs: must be from 576/],
      [['--dpdk-mbufs', '600', '--dpdk-burst', '64'], /--dpdk-mbufs 600 cannot fill 512 rx descriptors plus a burst of 64 \(at least 608\)/],
      [['--dpdk-mbuf-bytes', '512'], /^--dpdk-mbuf-bytes: /],
      [['--dpdk-mbuf-bytes', '64K'], /^--dpdk-mbuf-bytes: /],
      [['--dpdk-burst', '0'], /^--dpdk-burst: must be from 1 to 512/],
      [['--dpdk-burst', '513'], /^--dpdk-burst: must be from 1 to 512/],
      [['--dpdk-spin-us', '-1'], /^--dpdk-spin-us: /],
      [['--dpdk-sleep-us', '0'], /^--dpdk-sleep-us: must be from 1 to 100000/],
      [['--dpdk-sleep-max-us', '100001'], /^--dpdk-sleep-max-us: must be from 1 to 100000/],
      [['--dpdk-sleep-us', '300', '--dpdk-sleep-max-us', '200'], /--dpdk-sleep-us 300 is more than --dpdk-sleep-max-us 200/],
      [['--dpdk-promiscuous', 'maybe'], /^--dpdk-promiscuous: /],
      [['--dpdk-port', ''], /^--dpdk-port: must not be empty/],
      [['--dpdk-port', 'net_a net_b'], /--dpdk-port 'net_a net_b' must be one word/],
      [['--mirror-interface', 'eth0'], /--mirror-interface does not apply with --mirror dpdk/],
      [['--mirror-ring', 'v3'], /only apply with --mirror afpacket/],
      [['--dpdk-args', 'x'.repeat(4097)], /^--dpdk-args: /],
    ] as const) {
      expect(refusal(() => parseAgentCommand([...base, ...dpdk, ...flags], {})), flags.join(' ')).toMatch(message);
    }
    for (const [content, message] of [
      [{ dpdkArgs: 3 }, /key "dpdkArgs"/],
      [{ dpdkBurst: '32' }, /key "dpdkBurst": must be a whole number/],
      [{ dpdkSleepMaxUs: 0 }, /key "dpdkSleepMaxUs": must be from 1 to 100000, got 0/],
      [{ dpdkPromiscuous: 'yes' }, /key "dpdkPromiscuous"/],
    ] as const) {
      const path = file({ segment: 's', servers: ['h:1'], token: 't', prefetchParser: 'resp', app: '127.0.0.1:1', mirror: 'dpdk', ...content });
      expect(refusal(() => parseAgentCommand(['--config', path], {})), JSON.stringify(content)).toMatch(message);
    }
  });

  it('reads servers from a config file as an array or a comma list; flags override', () => {
    const cfg = file({ segment: 'kv', servers: ['a:1', 'b:2'], hostView: false, maxBatchBytes: '1M', token: 't' });
    const c = parseAgentCommand(['--config', cfg, '--host-view', 'on'], {});
    expect(c.kind === 'run' && c.options.servers).toEqual([
      { host: 'a', port: 1 },
      { host: 'b', port: 2 },
    ]);
    expect(c.kind === 'run' && c.options.hostView).toBe(true);
    expect(c.kind === 'run' && c.options.maxBatchBytes).toBe(2 ** 20);
    expect(agentOptions({ segment: 's', servers: 'a:1, b:2', token: 't' }, {}).servers).toHaveLength(2);
    expect(refusal(() => agentOptions({ segment: 's', token: 't' }, {}))).toMatch(/^option "servers" is required/);
  });

  it('refuses bad values, naming the flag or key', () => {
    const cases: Array<[object, RegExp]> = [
      [{ servers: [] }, /key "servers": must name at least one HOST:PORT/],
      [{ servers: ['a:1', 'a:1'] }, /key "servers": names a:1 twice/],
      [{ servers: ['a:0'] }, /key "servers": port must be a number from 1 to 65535/],
      [{ servers: [7400] }, /key "servers": item 0 must be a "HOST:PORT" string, got a number/],
      [{ servers: { a: 1 } }, /key "servers": must be an array/],
      [{ hostView: 'on' }, /key "hostView": must be true or false, got a string/],
      [{ hostViewShards: 65 }, /key "hostViewShards": must be from 0 to 64, got 65/],
      [{ hostViewSpinUs: -1 }, /key "hostViewSpinUs": must be from 0 to 1000000, got -1/],
      [{ maxOutstanding: 5000 }, /key "maxOutstanding": must be from 1 to 1024/],
      [{ segment: '' }, /key "segment": must not be empty/],
      [{ segment: 'x'.repeat(300) }, /key "segment": must be at most 255 bytes/],
      [{ responseBuffer: '1K' }, /key "responseBuffer": must be from 64K/],
      [{ maxBatchRecords: 'many' }, /key "maxBatchRecords": must be a whole number/],
      [{ server: 'a:1' }, /unknown key "server" \(did you mean "servers"\?\)/],
    ];
    for (const [content, message] of cases) {
      const path = file({ segment: 's', servers: ['h:1'], token: 't', ...content });
      expect(
        refusal(() => parseAgentCommand(['--config', path], {})),
        JSON.stringify(content),
      ).toMatch(message);
    }
    expect(refusal(() => parseAgentCommand([...base, '--host-view', 'yes'], {}))).toMatch(
      /^--host-view: must be on or off/,
    );
    expect(refusal(() => parseAgentCommand(['--segment', 's', '--servers', 'a:1,,b:2', '--token', 't'], {}))).toMatch(
      /^--servers: expected HOST:PORT, got ""/,
    );
  });

  it('reads the prefetch settings and refuses incomplete ones', () => {
    const c = parseAgentCommand([...base, '--prefetch-parser', 'resp', '--app', '127.0.0.1:6379'], {});
    expect(c.kind === 'run' && c.options.prefetch).toEqual({
      parser: 'resp',
      mirror: 'afpacket',
      app: { host: '127.0.0.1', port: 6379 },
      interface: 'lo',
      issuer: 'agent',
    });
    const tee = parseAgentCommand(
      [...base, '--prefetch-parser', 'resp', '--mirror', 'tee', '--app', '127.0.0.1:6380', '--tee-listen', '127.0.0.1:6379',
        '--prefetch-inflight', '100', '--prefetch-item-bytes', '4K', '--prefetch-issuer', 'host'],
      {},
    );
    expect(tee.kind === 'run' && tee.options.prefetch).toEqual({
      parser: 'resp',
      mirror: 'tee',
      app: { host: '127.0.0.1', port: 6380 },
      teeListen: { host: '127.0.0.1', port: 6379 },
      interface: 'lo',
      issuer: 'host',
      maxInflight: 100,
      maxItemBytes: 4096,
    });
    expect(refusal(() => parseAgentCommand([...base, '--prefetch-parser', 'resp'], {}))).toMatch(/--app .* is required/);
    expect(refusal(() => parseAgentCommand([...base, '--app', '127.0.0.1:1'], {}))).toMatch(
      /--app, --tee-listen, --prefetch-issuer and --prefetch-parser-config only apply with --prefetch-parser/,
    );
    expect(refusal(() => parseAgentCommand([...base, '--prefetch-issuer', 'host'], {}))).toMatch(/only apply with --prefetch-parser/);
    expect(
      refusal(() => parseAgentCommand([...base, '--prefetch-parser', 'resp', '--app', '127.0.0.1:1', '--prefetch-issuer', 'nic'], {})),
    ).toMatch(/^--prefetch-issuer: must be/);
    expect(
      refusal(() => parseAgentCommand([...base, '--prefetch-parser', 'resp', '--mirror', 'tee', '--app', '127.0.0.1:1'], {})),
    ).toMatch(/--mirror tee needs --tee-listen/);
    expect(refusal(() => parseAgentCommand([...base, '--mirror', 'pcap'], {}))).toMatch(/^--mirror: must be/);
    const app = ['--prefetch-parser', 'resp', '--app', '127.0.0.1:6379'];
    const ring = parseAgentCommand([...base, ...app, '--mirror-ring', 'v3', '--mirror-spin-us', '20', '--mirror-slice-us', '0'], {});
    expect(ring.kind === 'run' && ring.options.prefetch).toEqual({
      parser: 'resp',
      mirror: 'afpacket',
      app: { host: '127.0.0.1', port: 6379 },
      interface: 'lo',
      ring: 'v3',
      spinUs: 20,
      sliceUs: 0,
      issuer: 'agent',
    });
    expect(agentOptions({ segment: 's', servers: 'a:1', token: 't', prefetchParser: 'resp', app: '127.0.0.1:1', mirrorRing: 'v2', mirrorSpinUs: 0 }, {}).prefetch)
      .toMatchObject({ ring: 'v2', spinUs: 0 });
    expect(refusal(() => parseAgentCommand([...base, ...app, '--mirror-ring', 'v4'], {}))).toMatch(
      /^--mirror-ring: must be one of v2, v3, got "v4"/,
    );
    for (const bad of ['1001', '-1', '1e3', '0.5', 'x']) {
      expect(refusal(() => parseAgentCommand([...base, ...app, '--mirror-spin-us', bad], {})), bad).toMatch(/^--mirror-spin-us: must be/);
    }
    expect(refusal(() => parseAgentCommand([...base, ...app, '--mirror-slice-us', '100001'], {}))).toMatch(
      /^--mirror-slice-us: must be from 0 to 100000, got 100001/,
    );
    for (const [content, message] of [
      [{ mirrorRing: 'v1' }, /key "mirrorRing": must be one of v2, v3, got a string \("v1"\)/],
      [{ mirrorRing: 3 }, /key "mirrorRing": must be one of v2, v3/],
      [{ mirrorSpinUs: 5000 }, /key "mirrorSpinUs": must be from 0 to 1000, got 5000/],
      [{ mirrorSpinUs: '10' }, /key "mirrorSpinUs": must be a whole number/],
      [{ mirrorSliceUs: -1 }, /key "mirrorSliceUs": must be from 0 to 100000, got -1/],
    ] as const) {
      const path = file({ segment: 's', servers: ['h:1'], token: 't', prefetchParser: 'resp', app: '127.0.0.1:1', ...content });
      expect(refusal(() => parseAgentCommand(['--config', path], {})), JSON.stringify(content)).toMatch(message);
    }
    expect(
      refusal(() => parseAgentCommand([...base, '--prefetch-parser', 'resp', '--mirror', 'tee', '--app', '127.0.0.1:1',
        '--tee-listen', '127.0.0.1:0', '--mirror-ring', 'v2'], {})),
    ).toMatch(/^--mirror-ring, --mirror-spin-us and --mirror-slice-us only apply with --mirror afpacket/);
    expect(refusal(() => parseAgentCommand([...base, '--prefetch-inflight', '20000'], {}))).toMatch(/^--prefetch-inflight/);
  });
});

describe('--help', () => {
  const camel = (flag: string): string => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

  it('lists every flag, and each config key is its flag in camelCase', () => {
    for (const [table, help] of [
      [MEMSERVER_SETTINGS, memServerHelp()],
      [AGENT_SETTINGS, agentHelp()],
    ] as const) {
      for (const [key, setting] of Object.entries(table)) {
        expect(key).toBe(camel(setting.flag));
        expect(help).toContain(`--${setting.flag} ${setting.arg}`);
      }
      expect(help).toMatch(/--config FILE/);
      expect(help).toMatch(/PD3_TOKEN/);
    }
    expect(agentHelp()).toMatch(/--segment NAME +the host segment [^-]*\(required\)/);
  });
});
