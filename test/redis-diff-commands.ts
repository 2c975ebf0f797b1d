// redis-diff-commands.ts — seeded random command streams for comparing pd3-kv with redis-server:
// every string, counter, key and rename command pd3-kv implements, with edge-case arguments (huge,
// negative and non-numeric integers, floats in every spelling, empty values, binary keys, wrong
// arities, bad options). Nothing whose reply depends on timing: expiry times are either far in the
// future or in the past, and TTL/PTTL replies are marked for a loose comparison. So is DBSIZE: a
// key SET with a time already past stays until it is touched or the server's background expiry
// samples it, which happens at different moments on the two servers.
import { Rand } from './workers/model-run.mjs';

/** One generated command; `loose` marks a reply that may differ by the clock (TTL, PTTL) or by
 *  when expired keys are collected (DBSIZE, by at most `slack` keys). */
export interface DiffCommand {
  args: Buffer[];
  loose?: 'ttl' | 'pttl' | 'dbsize';
  slack?: number;
}

const KEYS: Buffer[] = [
  ...['k0', 'k1', 'k2', 'k3', 'k4', 'k5', 'n', 'f', 'a b'].map((k) => Buffer.from(k)),
  Buffer.from([0x00, 0xff, 0x0d, 0x0a]),
  Buffer.from('\r\n$3\r\n'),
];
const INTS = [
  '0', '1', '-1', '7', '42', '100', '-100', '9223372036854775807', '-9223372036854775808',
  '9223372036854775808', '-9223372036854775809', '18446744073709551616', '007', '-0', '+5', ' 5',
  '5 ', '1.5', '1e3', 'abc', '', '99999999999999999999', '4503599627370496', '9007199254740993',
];
const FLOATS = [
  '0', '1', '-1', '0.1', '0.2', '1.1', '2.2', '3.0', '-0', '1e10', '1e-10', '1e308', '1e400',
  '-1e400', '1e-400', '0x10', '0x1.8p3', '-0x.8', 'inf', '-inf', '+inf', 'nan', 'abc', '', ' 1',
  '1 ', '.5', '5.', '1e', '9007199254740993', '1.23456789012345678901', '123456789.987654321',
];
// Expiry arguments: far future, past, zero, negative, overflowing or malformed.
const TIMES_REL = ['100000', '99999999', '0', '-1', '-100', '9223370399119966', '9223372036854775807',
  '-9223372036854776', '9007199254740', 'x', '1.5', '10000000000000000', '-9999999999999999'];
const TIMES_ABS = ['1', '1000', '4102444800', '4102444800000', '4503599627370496', '9223372036854770000',
  '-9223372036854770000', '-4503599627370496', '9223372036854775807', '9223372036854776', '0', 'x'];

/** A generator of random commands for one seed. */
export class DiffCommands {
  private readonly rand: Rand;
  // Keys that may hold a past expiry without having been deleted yet: SET with EXAT or PXAT (the
  // time may be past), and copies or renames of such keys. Never shrinks: it bounds DBSIZE's slack.
  private readonly mayLinger = new Set<string>();

  constructor(seed: number) {
    this.rand = new Rand(seed);
  }

  private pick<T>(xs: readonly T[]): T {
    return xs[this.rand.int(xs.length)]!;
  }

  private key(): Buffer {
    return this.pick(KEYS);
  }

  private value(): Buffer {
    switch (this.rand.int(6)) {
      case 0: return Buffer.from(this.pick(INTS));
      case 1: return Buffer.from(this.pick(FLOATS));
      case 2: return Buffer.alloc(0);
      case 3: return this.rand.bytes(1 + this.rand.int(40));
      case 4: return Buffer.from(String(this.rand.int(2000) - 1000));
      default: return Buffer.from(this.randomFloat());
    }
  }

  /** A float text of random digits and exponent, as clients send to INCRBYFLOAT. */
  randomFloat(): string {
    const sign = this.pick(['', '', '-', '+']);
    const int = String(this.rand.int(10 ** (1 + this.rand.int(9))));
    const frac = this.rand.int(3) === 0 ? '' : `.${String(this.rand.int(10 ** (1 + this.rand.int(9)))).padStart(3, '0')}`;
    const exp = this.rand.int(4) === 0 ? `e${this.rand.int(60) - 30}` : '';
    return `${sign}${int}${frac}${exp}`;
  }

  private b(...words: Array<string | Buffer>): Buffer[] {
    return words.map((w) => (typeof w === 'string' ? Buffer.from(w, 'latin1') : w));
  }

  // GT/LT only with absolute times: two relative times set a millisecond apart compare differently
  // on the two servers.
  private expireOptions(absolute: boolean): string[] {
    const opts = absolute ? ['NX', 'XX', 'GT', 'LT', 'nx', 'gt', 'BAD'] : ['NX', 'XX', 'nx', 'BAD'];
    const n = this.rand.int(4) === 0 ? 1 + this.rand.int(2) : 0;
    return Array.from({ length: n }, () => this.pick(opts));
  }

  private setOptions(): string[] {
    const out: string[] = [];
    const n = this.rand.int(3);
    for (let i = 0; i < n; ++i) {
      switch (this.rand.int(8)) {
        case 0: out.push(this.pick(['NX', 'nx'])); break;
        case 1: out.push('XX'); break;
        case 2: out.push(this.pick(['GET', 'get'])); break;
        case 3: out.push('KEEPTTL'); break;
        case 4: out.push(this.pick(['EX', 'PX']), this.pick(TIMES_REL)); break;
        case 5: out.push(this.pick(['EXAT', 'PXAT']), this.pick(TIMES_ABS)); break;
        case 6: out.push(this.pick(['EX', 'BAD'])); break;
        default: break;
      }
    }
    return out;
  }

  /** `to`, the destination of a copy or rename of `from`: it may linger if `from` may. */
  private lingering(from: Buffer, to: Buffer): Buffer {
    if (this.mayLinger.has(from.toString('latin1'))) this.mayLinger.add(to.toString('latin1'));
    return to;
  }

  /** The next command. */
  next(): DiffCommand {
    const k = this.key();
    const r = this.rand.int(100);
    if (r < 10) {
      const value = this.value();  // before the options: the seeds' streams stay as they were
      const options = this.setOptions();
      if (options.includes('EXAT') || options.includes('PXAT')) this.mayLinger.add(k.toString('latin1'));
      return { args: this.b('SET', k, value, ...options) };
    }
    if (r < 16) return { args: this.b('GET', k) };
    if (r < 18) return { args: this.b('SETNX', k, this.value()) };
    if (r < 20) return { args: this.b(this.pick(['SETEX', 'PSETEX']), k, this.pick(TIMES_REL), this.value()) };
    if (r < 22) return { args: this.b('GETSET', k, this.value()) };
    if (r < 24) return { args: this.b('GETDEL', k) };
    if (r < 27) {
      const opt = this.pick([[], ['PERSIST'], ['EX', this.pick(TIMES_REL)], ['PX', this.pick(TIMES_REL)],
        ['EXAT', this.pick(TIMES_ABS)], ['PXAT', this.pick(TIMES_ABS)], ['BAD'], ['EX'], ['PERSIST', 'EX', '1']]);
      return { args: this.b('GETEX', k, ...opt) };
    }
    if (r < 30) return { args: this.b('MGET', ...Array.from({ length: 1 + this.rand.int(4) }, () => this.key())) };
    if (r < 33) {
      const pairs = Array.from({ length: 1 + this.rand.int(3) }, () => [this.key(), this.value()]).flat();
      if (this.rand.int(10) === 0) pairs.pop(); // an odd count: wrong number of arguments
      return { args: this.b(this.pick(['MSET', 'MSETNX']), ...pairs) };
    }
    if (r < 36) return { args: this.b('APPEND', k, this.value()) };
    if (r < 38) return { args: this.b('STRLEN', k) };
    if (r < 41) return { args: this.b('GETRANGE', k, this.pick([...INTS.slice(0, 7), '3', '-3', '2']), this.pick([...INTS.slice(0, 7), '5', '-2'])) };
    if (r < 43) return { args: this.b('SETRANGE', k, this.pick(['0', '1', '5', '17', '-1', 'x', '99']), this.value()) };
    if (r < 50) return { args: this.b(this.pick(['INCR', 'DECR']), this.pick([k, Buffer.from('n')])) };
    if (r < 55) return { args: this.b(this.pick(['INCRBY', 'DECRBY']), this.pick([k, Buffer.from('n')]), this.pick(INTS)) };
    if (r < 63) {
      const by = this.rand.int(3) === 0 ? this.pick(FLOATS) : this.randomFloat();
      return { args: this.b('INCRBYFLOAT', this.pick([k, Buffer.from('f')]), by) };
    }
    if (r < 66) return { args: this.b(this.pick(['DEL', 'UNLINK', 'EXISTS']), ...Array.from({ length: 1 + this.rand.int(3) }, () => this.key())) };
    if (r < 67) return { args: this.b('TYPE', k) };
    if (r < 72) return { args: this.b(this.pick(['EXPIRE', 'PEXPIRE']), k, this.pick(TIMES_REL), ...this.expireOptions(false)) };
    if (r < 76) return { args: this.b(this.pick(['EXPIREAT', 'PEXPIREAT']), k, this.pick(TIMES_ABS), ...this.expireOptions(true)) };
    if (r < 78) return { args: this.b('PERSIST', k) };
    if (r < 81) {
      const which = this.pick(['ttl', 'pttl'] as const);
      return { args: this.b(which.toUpperCase(), k), loose: which };
    }
    if (r < 85) return { args: this.b(this.pick(['RENAME', 'RENAMENX']), k, this.lingering(k, this.key())) };
    if (r < 88) {
      const opt = this.pick([[], [], ['REPLACE'], ['DB', '0'], ['DB', '0', 'REPLACE'], ['BAD'], ['DB', 'x']]);
      return { args: this.b('COPY', k, this.lingering(k, this.key()), ...opt) };
    }
    if (r < 90) {
      const name = this.pick(['EXISTS', 'DBSIZE', 'PING']);  // arity errors and plain replies
      return name === 'DBSIZE' ? { args: this.b(name), loose: 'dbsize', slack: this.mayLinger.size } : { args: this.b(name) };
    }
    if (r < 92) return { args: this.b('ECHO', this.value()) };
    if (r < 94) return { args: this.b(this.pick(['GET', 'SET', 'INCRBY', 'EXPIRE', 'GETRANGE']), k) }; // too few arguments
    return { args: this.b('SET', k, this.value()) };
  }

  /** Whether the next group is a MULTI/EXEC block, and its size. */
  transactionSize(): number {
    return this.rand.int(8) === 0 ? 1 + this.rand.int(6) : 0;
  }

  /** The size of the next pipeline. */
  pipelineSize(): number {
    return 1 + this.rand.int(this.rand.int(4) === 0 ? 60 : 8);
  }
}
