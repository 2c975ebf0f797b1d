// median.ts — the middle of a benchmark's repeated runs, which its rows report.

/** The median of `xs`: the middle value, or the mean of the two middle ones for an even count.
 *  Throws for no values (a benchmark that ran nothing has nothing to report). */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) throw new Error('median of no values');
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}
