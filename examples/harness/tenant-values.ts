// tenant-values.ts — the values of the two-tenant isolation check (test/tenant-isolation.test.ts,
// `npm run bench -- pool`): every tenant writes the same keys, key:0 … key:N-1, each with a value
// that names its tenant, the key's number and a part drawn from this run's random seed,
// "<tenant>:<i>:<8 hex digits>" (the seed lets the process that reads the values judge them
// without being sent them). Whatever value an app obtains for a key (from its Loading Zone or by a
// remote read) and whatever value a client gets back is judged here: a value of another tenant is
// a foreign value, the one failure isolation must never show.
import { createHash, randomBytes } from 'node:crypto';

/** How a value obtained for a key is judged, for the tenant that asked. */
export type Verdict =
  /** Exactly the value this tenant wrote for the key. */
  | 'own'
  /** Not this tenant's: another tenant's prefix, or none this test writes (a leak). */
  | 'foreign'
  /** This tenant's, but not for this key or not from this run (a mix-up, not a leak). */
  | 'wrong'
  /** No value at all (the key was written, so a miss is a failure too). */
  | 'missing';

/** The key of number `i`. */
export function tenantKey(i: number): string {
  return `key:${i}`;
}

/** The number of a key written by tenantKey, or -1. */
export function keyNumber(key: string): number {
  const m = /^key:(\d+)$/.exec(key);
  return m === null ? -1 : Number(m[1]);
}

/** The values one tenant writes for its `count` keys. */
export class TenantValues {
  private readonly nonces: string[];

  /** `seed`: any text; the same seed gives the same values (default: drawn at random now). */
  constructor(
    readonly tenant: string,
    readonly count: number,
    readonly seed = randomBytes(8).toString('hex'),
  ) {
    this.nonces = Array.from({ length: count }, (_, i) => createHash('sha256').update(`${seed}:${i}`).digest('hex').slice(0, 8));
  }

  /** The value of key number `i`. */
  value(i: number): string {
    return `${this.tenant}:${i}:${this.nonces[i]}`;
  }

  /** Judges `value`, obtained for `key` by this tenant. */
  judge(key: string, value: string | null): Verdict {
    if (value === null) return 'missing';
    if (!value.startsWith(`${this.tenant}:`)) return 'foreign';
    const i = keyNumber(key);
    return i >= 0 && i < this.count && value === this.value(i) ? 'own' : 'wrong';
  }
}

/** Counts of verdicts. */
export type VerdictCounts = Record<Verdict, number>;

/** A fresh count of verdicts, all 0. */
export function noVerdicts(): VerdictCounts {
  return { own: 0, foreign: 0, wrong: 0, missing: 0 };
}
