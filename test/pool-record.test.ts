// The pool's records in etcd (common/pool-record.ts), the pool flags, and the harvestable-memory
// reading: round trips, every kind of bad input, and a fuzz of mutated records.
import { describe, expect, it } from 'vitest';
import {
  checkPoolPrefix,
  encodeMemberRecord,
  MEMBER_RECORD_VERSION,
  memberKey,
  parseMemberRecord,
  PoolRecordError,
  type MemberRecord,
} from '../dist/common/pool-record.js';
import { parseMemServerCommand } from '../dist/memserver/config.js';
import { harvestableBytes, memAvailableBytes } from '../dist/memserver/meminfo.js';
import { UsageError } from '../dist/cli/usage-error.js';

const GOOD: MemberRecord = {
  v: MEMBER_RECORD_VERSION,
  serverId: 3,
  address: '10.0.0.7:7400',
  capacityBytes: 4 * 2 ** 30,
  freeBytes: 2 ** 30,
  harvestableBytes: 12 * 2 ** 30,
  startedMs: 1_790_000_000_000,
  updatedMs: 1_790_000_001_000,
};
const KEY = memberKey('/pd3', 3);

function refusal(text: string, key = KEY, prefix = '/pd3'): string {
  try {
    parseMemberRecord(prefix, key, text);
  } catch (e) {
    expect(e).toBeInstanceOf(PoolRecordError);
    return (e as Error).message;
  }
  throw new Error('accepted');
}

describe('membership records', () => {
  it('round-trip through their JSON text, under /PREFIX/members/ID', () => {
    expect(KEY).toBe('/pd3/members/3');
    expect(memberKey('/', 0)).toBe('/members/0');
    expect(parseMemberRecord('/pd3', KEY, encodeMemberRecord(GOOD))).toEqual(GOOD);
  });

  it('ignore fields they do not know (a newer writer of the same version)', () => {
    const text = JSON.stringify({ ...GOOD, zone: 'rack-4' });
    expect(parseMemberRecord('/pd3', KEY, text)).toEqual(GOOD);
  });

  it('refuse each malformed record, saying why', () => {
    const with_ = (patch: Record<string, unknown>): string => JSON.stringify({ ...GOOD, ...patch });
    expect(refusal('not json')).toMatch(/not JSON/);
    expect(refusal('[1,2]')).toMatch(/not a JSON object/);
    expect(refusal('null')).toMatch(/not a JSON object/);
    expect(refusal(with_({ v: 2 }))).toMatch(/record version 2, this build reads 1/);
    expect(refusal(with_({ v: undefined }))).toMatch(/record version undefined/);
    expect(refusal(with_({ serverId: 4 }))).toMatch(/serverId 4 is not the key's 3/);
    expect(refusal(with_({ serverId: -1 }))).toMatch(/serverId must be a whole number/);
    // Server ids are 16-bit (the top half of a region id): 65535 is the last, 65536 is refused.
    const big = { ...GOOD, serverId: 65535 };
    expect(parseMemberRecord('/pd3', memberKey('/pd3', 65535), encodeMemberRecord(big))).toEqual(big);
    expect(refusal(with_({ serverId: 65536 }), memberKey('/pd3', 65536))).toMatch(
      /serverId must be a whole number from 0 to 65535, got 65536/,
    );
    expect(refusal(with_({ capacityBytes: 1.5 }))).toMatch(/capacityBytes must be a whole number/);
    expect(refusal(with_({ freeBytes: '1' }))).toMatch(/freeBytes must be a whole number/);
    expect(refusal(with_({ harvestableBytes: 2 ** 60 }))).toMatch(/harvestableBytes must be a whole number/);
    expect(refusal(with_({ updatedMs: undefined }))).toMatch(/updatedMs must be a whole number from 0 to \d+, got nothing/);
    expect(refusal(with_({ freeBytes: GOOD.capacityBytes + 1 }))).toMatch(/exceeds capacityBytes/);
    expect(refusal(with_({ address: '10.0.0.7' }))).toMatch(/address must be "HOST:PORT"/);
    expect(refusal(with_({ address: '10.0.0.7:70000' }))).toMatch(/address must be "HOST:PORT"/);
    expect(refusal(with_({ address: 'a b:1' }))).toMatch(/address must be "HOST:PORT"/);
    expect(refusal(with_({ address: 7400 }))).toMatch(/address must be "HOST:PORT"/);
    expect(refusal(encodeMemberRecord(GOOD), '/other/members/3')).toMatch(/not under \/pd3\/members\//);
    expect(refusal(encodeMemberRecord(GOOD), '/pd3/members/03')).toMatch(/does not end in a server id/);
    expect(refusal(encodeMemberRecord(GOOD), '/pd3/members/3/x')).toMatch(/does not end in a server id/);
    expect(refusal(encodeMemberRecord(GOOD), '/pd3/members/')).toMatch(/does not end in a server id/);
  });

  it('keep an error message to one short line', () => {
    const msg = refusal(`{"v":1,${' '.repeat(10_000)}`);
    expect(msg.length).toBeLessThan(160);
    expect(msg).not.toContain('\n');
  });

  it('fuzzed: a mutated record is either parsed or refused with PoolRecordError, never anything else', () => {
    for (const base of [encodeMemberRecord(GOOD), encodeMemberRecord({ ...GOOD, load: 812.5, hot: [{ region: (3 << 16) | 1, rate: 640.25 }, { region: (3 << 16) | 2, rate: 172.25 }] })]) {
      fuzzMembers(base);
    }
  });

  function fuzzMembers(base: string): void {
    let seed = 12345;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const alphabet = '{}[]":,0123456789-.eE+ truefalsnul\\\u0000\u00ff';
    let parsed = 0;
    let refused = 0;
    for (let i = 0; i < 20_000; ++i) {
      const chars = [...base];
      for (let m = 1 + rand(4); m > 0; --m) {
        const at = rand(chars.length + 1);
        const op = rand(3);
        if (op === 0) chars.splice(at, 1);
        else if (op === 1) chars.splice(at, 0, alphabet[rand(alphabet.length)]!);
        else chars[at] = alphabet[rand(alphabet.length)]!;
      }
      try {
        const r = parseMemberRecord('/pd3', KEY, chars.join(''));
        expect(r.serverId).toBe(3);
        expect(r.freeBytes).toBeLessThanOrEqual(r.capacityBytes);
        // Heat is both or neither, every hot region this server's, every number in range.
        expect(r.load === undefined).toBe(r.hot === undefined);
        for (const h of r.hot ?? []) expect(h.region >>> 16).toBe(3);
        expect(Number.isFinite(r.load ?? 0) && (r.load ?? 0) >= 0).toBe(true);
        parsed++;
      } catch (e) {
        if (!(e instanceof PoolRecordError)) throw e;
        refused++;
      }
    }
    // Both outcomes happen, so the fuzz reaches past the JSON parse.
    expect(parsed).toBeGreaterThan(100);
    expect(refused).toBeGreaterThan(1000);
  }

  it('take a prefix that is absolute, without a trailing slash or spaces', () => {
    expect(checkPoolPrefix('/pd3')).toBe('/pd3');
    expect(checkPoolPrefix('/')).toBe('/');
    expect(() => checkPoolPrefix('pd3')).toThrow(/must start with "\/"/);
    expect(() => checkPoolPrefix('/pd3/')).toThrow(/must not end with "\/"/);
    expect(() => checkPoolPrefix('/pd 3')).toThrow(/printable ASCII/);
    expect(() => checkPoolPrefix(`/${'x'.repeat(300)}`)).toThrow(/at most 256 bytes/);
  });
});

describe('pd3-memserver pool flags', () => {
  const usage = (argv: string[]): string => {
    try {
      parseMemServerCommand(argv, { PD3_TOKEN: 't' });
    } catch (e) {
      expect(e).toBeInstanceOf(UsageError);
      return (e as Error).message;
    }
    throw new Error('accepted');
  };

  it('build the pool options from --etcd, with defaults', () => {
    const c = parseMemServerCommand(['--etcd', 'http://127.0.0.1:2379,https://e2:2379/'], { PD3_TOKEN: 't' });
    if (c.kind !== 'run') throw new Error(c.kind);
    expect(c.options.pool).toEqual({ endpoints: ['http://127.0.0.1:2379', 'https://e2:2379'], prefix: '/pd3', leaseTtlS: 10, reclaimGraceS: 30 });
    const d = parseMemServerCommand(['--etcd', 'http://h:1', '--etcd-prefix', '/a/b', '--lease-ttl', '4', '--listen', '0.0.0.0:7400',
      '--advertise', 'm1.example:7400', '--reclaim-grace', '0'], { PD3_TOKEN: 't' });
    if (d.kind !== 'run') throw new Error(d.kind);
    expect(d.options.pool).toEqual({
      endpoints: ['http://h:1'], prefix: '/a/b', leaseTtlS: 4, reclaimGraceS: 0, advertise: { host: 'm1.example', port: 7400 },
    });
    const none = parseMemServerCommand([], { PD3_TOKEN: 't' });
    if (none.kind !== 'run') throw new Error(none.kind);
    expect(none.options.pool).toBeUndefined();
  });

  it('refuse bad values, naming the flag', () => {
    expect(usage(['--etcd', 'ftp://h:1'])).toMatch(/--etcd.*scheme must be http or https/);
    expect(usage(['--reclaim-grace', '5'])).toMatch(/--reclaim-grace needs --etcd/);
    expect(usage(['--etcd', 'http://h:1', '--reclaim-grace', '-1'])).toMatch(/--reclaim-grace/);
    expect(usage(['--etcd', 'http://h:1', '--reclaim-grace', '86401'])).toMatch(/--reclaim-grace/);
    expect(usage(['--etcd', 'http://h'])).toMatch(/--etcd.*names no port/);
    expect(usage(['--etcd', 'h:2379'])).toMatch(/--etcd/);
    expect(usage(['--etcd', 'http://u:p@h:1'])).toMatch(/credentials/);
    expect(usage(['--etcd', 'http://h:1/v3'])).toMatch(/no path/);
    expect(usage(['--etcd', 'http://h:1,http://h:1'])).toMatch(/names http:\/\/h:1 twice/);
    expect(usage(['--etcd', ''])).toMatch(/at least one URL/);
    expect(usage(['--etcd', 'http://h:1', '--lease-ttl', '1'])).toMatch(/--lease-ttl.*from 2 to 3600/);
    expect(usage(['--etcd', 'http://h:1', '--etcd-prefix', 'pd3'])).toMatch(/--etcd-prefix.*must start with/);
  });

  it('refuse pool flags without --etcd, and a wildcard listen address with nothing to advertise', () => {
    expect(usage(['--lease-ttl', '5'])).toBe('--lease-ttl needs --etcd');
    expect(usage(['--etcd-prefix', '/x'])).toBe('--etcd-prefix needs --etcd');
    expect(usage(['--advertise', 'h:1'])).toBe('--advertise needs --etcd');
    expect(usage(['--etcd', 'http://h:1', '--listen', '0.0.0.0:7400'])).toMatch(/give --advertise/);
  });
});

describe('harvestable memory', () => {
  it('is MemAvailable less the headroom share', () => {
    const meminfo = 'MemTotal:       24683584 kB\nMemFree:        23000000 kB\nMemAvailable:   20000000 kB\nBuffers: 1 kB\n';
    expect(memAvailableBytes(meminfo)).toBe(20_000_000 * 1024);
    expect(harvestableBytes(20_000_000 * 1024, 0.15)).toBe(Math.floor(20_000_000 * 1024 * 0.85));
    expect(harvestableBytes(1000, 1)).toBe(0);
  });

  it('is unknown when /proc/meminfo has no usable MemAvailable line', () => {
    expect(memAvailableBytes('MemTotal: 1 kB\n')).toBeNull();
    expect(memAvailableBytes('MemAvailable: lots kB\n')).toBeNull();
    expect(memAvailableBytes('MemAvailable: 99999999999999999999 kB\n')).toBeNull();
  });
});
