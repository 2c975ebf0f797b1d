// pd3-kv-float.test.ts — INCRBYFLOAT as Redis 7.0 on x86-64 answers it (long double arithmetic,
// "%.17Lf" trimmed): the expected replies were taken from redis-server 7.0; the random comparison
// against a live redis-server is in test/pd3-kv-redis-diff.test.ts.
import { describe, expect, it } from 'vitest';
import { addLongDouble, formatLongDouble, parseLongDouble } from '../dist/examples/pd3-kv/long-double.js';

/** Sums `terms` from 0 as successive INCRBYFLOATs; the reply of the last, or the error. */
function incrs(...terms: string[]): string {
  let v = parseLongDouble('0')!;
  for (const t of terms) {
    const by = parseLongDouble(t);
    if (by === null) return 'ERR value is not a valid float';
    const next = addLongDouble(v, by);
    if (next === null || 'inf' in next) return 'ERR increment would produce NaN or Infinity';
    v = next;
  }
  return formatLongDouble(v);
}

describe('long double as Redis computes INCRBYFLOAT', () => {
  it('matches redis-server 7.0', () => {
    expect(incrs('1.1', '2.2')).toBe('3.3');
    expect(incrs('0.1', '0.2')).toBe('0.3');
    expect(incrs('0.1', '0.2', '9007199254740993')).toBe('9007199254740993.2998046875');
    expect(incrs('0.1', '0.2', '9007199254740993', '0x10', '0x1.8p3')).toBe('9007199254741021.2998046875');
    for (const inf of ['+inf', 'inf', '-inf', 'Infinity']) expect(incrs('1', inf)).toBe('ERR increment would produce NaN or Infinity');
    for (const bad of ['nan', ' 1', '1 ', '1e', '0x', '1e5000', '1e-5000', '', 'abc']) expect(incrs(bad), bad).toBe('ERR value is not a valid float');
    expect(incrs('1e400')).toMatch(/^10000000000000000000281880683947586514586453433629052038625910693539685534008629862039363994848324160522094053927317616200295822777259255734023828976593340661017797447434546173917862448116674971723778943824391593338047470675026246684401359237513603830343735485505244955964979021825038280091068414947402456898653040951017512658092615827588920183472511643316591362664138176309734806343732497430221946880$/);
    expect(incrs('1e-400')).toBe('0');
    expect(incrs('-0.000000000000000001')).toBe('0');
    expect(incrs('.5', '5.', '-5.5')).toBe('0');
    expect(incrs('-0', '0')).toBe('0');
    expect(incrs('1.23456789012345678901234')).toBe('1.23456789012345679');
    expect(incrs('0e99999')).toBe('0');
  });
});
