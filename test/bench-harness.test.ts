// Two helpers every benchmark script uses: the median of its repeated runs
// (examples/harness/median.ts), and a flag's whole number within its range
// (examples/harness/bench-command.ts).
import { describe, expect, it } from 'vitest';
import { integerFlag } from '../dist/examples/harness/bench-command.js';
import { median } from '../dist/examples/harness/median.js';

describe('median', () => {
  it('takes the middle value of an odd count and the mean of the two middle ones of an even count', () => {
    expect(median([7])).toBe(7);
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([5, 5, 1, 9])).toBe(5);
  });

  it('sorts numerically and leaves its argument as it was', () => {
    const xs = [10, 9, 100, 2, 1];
    expect(median(xs)).toBe(9);
    expect(xs).toEqual([10, 9, 100, 2, 1]);
  });

  it('refuses no values', () => {
    expect(() => median([])).toThrow('median of no values');
  });
});

describe('integerFlag', () => {
  it('takes whole numbers within the range, the ends included', () => {
    expect(integerFlag('--n', '1', 1, 256)).toBe(1);
    expect(integerFlag('--n', '256', 1, 256)).toBe(256);
    expect(integerFlag('--n', '007', 1, 256)).toBe(7);
  });

  it('refuses anything else, naming the flag, the range and what it got', () => {
    for (const bad of ['0', '257', '-1', '1.5', '1e2', '', ' 8', 'x', '0x10'])
      expect(() => integerFlag('--n', bad, 1, 256), bad).toThrow(`--n must be an integer from 1 to 256, got '${bad}'`);
  });
});
