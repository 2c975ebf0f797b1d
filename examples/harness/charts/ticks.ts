// ticks.ts — axis ticks and number formats chosen here rather than by Vega, so that each axis has
// one format: linear steps of 1-2-5 with fixed decimals, log axes on powers of ten.

/** A 1-2-5 step near span / count (d3's tick increment rule). */
function niceStep(span: number, count: number): number {
  const raw = span / count;
  const power = Math.floor(Math.log10(raw));
  const error = raw / 10 ** power;
  const factor = error >= Math.sqrt(50) ? 10 : error >= Math.sqrt(10) ? 5 : error >= Math.sqrt(2) ? 2 : 1;
  return factor * 10 ** power;
}

/** Decimals needed to print multiples of `step` all the same way. */
function decimalsFor(step: number): number {
  return Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
}

export interface AxisTicks {
  domain: [number, number];
  values: number[];
  format: string;
}

/** Linear axis from 0: about five ticks on a 1-2-5 step, all printed with the same decimals. */
function linearTicks(values: number[]): AxisTicks {
  const max = Math.max(...values, 0);
  const min = Math.min(...values, 0);
  const span = max - min > 0 ? max - min : Math.abs(max) || 1;
  const step = niceStep(span, 5);
  const lo = Math.floor(min / step) * step;
  const hi = Math.max(Math.ceil(max / step) * step, lo + step);
  const d = decimalsFor(step);
  const ticks: number[] = [];
  for (let t = lo; t <= hi + step / 2; t += step) ticks.push(Number(t.toFixed(d)));
  return { domain: [lo, hi], values: ticks, format: `,.${d}f` };
}

/** Log axis: ticks at 1, 2, 5 × powers of ten when the data spans up to 3 decades, else at powers of ten. */
function logTicks(values: number[]): AxisTicks {
  const lo = Math.floor(Math.log10(Math.min(...values) / 1.5));
  const hi = Math.ceil(Math.log10(Math.max(...values)));
  const top = hi > lo ? hi : lo + 1;
  const mantissas = top - lo <= 3 ? [1, 2, 5] : [1];
  const ticks: number[] = [];
  for (let e = lo; e <= top; ++e) {
    for (const m of mantissas) {
      const t = Number((m * 10 ** e).toPrecision(6));
      if (t <= 10 ** top * 1.000001) ticks.push(t);
    }
  }
  // Trim to the decades the data touch: first tick at least 1.5× below the minimum (bars on a log
  // scale start at the bottom of the axis: the smallest must still show), last at or above the maximum.
  const vmin = Math.min(...values) / 1.5;
  const vmax = Math.max(...values);
  let first = 0;
  ticks.forEach((t, i) => { if (t <= vmin) first = i; });
  const lastAbove = ticks.findIndex((t) => t >= vmax);
  const kept = ticks.slice(first, (lastAbove < 0 ? ticks.length - 1 : lastAbove) + 1);
  // One d3-format for the axis: plain numbers with thousands separators, no trailing zeros
  // (0.1, 1, 10, 100, 1,000), the usual reading of a log axis.
  return { domain: [kept[0]!, kept.at(-1)!], values: kept, format: ',~g' };
}

export function axisTicks(values: number[], log: boolean | undefined): AxisTicks {
  return log ? logTicks(values) : linearTicks(values);
}

/** One format for the value labels on bars: enough decimals for the smallest value to show 2 digits. */
export function labelFormat(values: number[]): string {
  const smallest = Math.min(...values.map(Math.abs).filter((v) => v > 0));
  if (!Number.isFinite(smallest) || smallest >= 100) return ',.0f';
  return smallest >= 10 ? ',.1f' : ',.2f';
}
