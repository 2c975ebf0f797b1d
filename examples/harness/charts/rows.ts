// rows.ts — checks of the rows a builder is given (field names Vega-Lite reads as plain names,
// numbers where numbers belong, log scales above zero) and the colours of their series.
import { type CategoryField, type ChartRow, FALLBACK_COLORS, MODE_COLORS, type ValueAxis } from './types.js';

function checkField(field: string, what: string): void {
  if (!/^[A-Za-z_][A-Za-z0-9_ -]*$/.test(field)) {
    throw new Error(`chart: ${what} field name ${JSON.stringify(field)} must be letters, digits, _, - or spaces (Vega-Lite reads . and [] as paths)`);
  }
}

function rowName(row: ChartRow, keys: string[]): string {
  return keys.map((k) => String(row[k])).join('/');
}

/** The numbers of `field` in the rows (nulls left out), after checking each row. */
export function numbers(rows: ChartRow[], axis: ValueAxis, labelKeys: string[], what: string): number[] {
  checkField(axis.field, what);
  const out: number[] = [];
  rows.forEach((row, i) => {
    if (!(axis.field in row)) {
      throw new Error(`chart: row ${i} (${rowName(row, labelKeys)}) has no ${JSON.stringify(axis.field)}: use null for a value that was not measured`);
    }
    const v = row[axis.field];
    if (v === null) return;
    if (typeof v !== 'number' || !Number.isFinite(v)) {
      throw new Error(`chart: ${axis.field} of ${rowName(row, labelKeys)} is ${String(v)}, not a finite number (null: not measured)`);
    }
    if (axis.log && v <= 0) {
      throw new Error(`chart: ${axis.field} of ${rowName(row, labelKeys)} is ${v}: a log scale needs values > 0`);
    }
    out.push(v);
  });
  if (out.length === 0) throw new Error(`chart: no ${axis.field} values to plot (all null)`);
  return out;
}

/** The values of a categorical field in order (given order first, then any others as they appear). */
export function categories(rows: ChartRow[], cat: CategoryField, what: string): string[] {
  checkField(cat.field, what);
  const seen: string[] = [...(cat.order ?? [])];
  rows.forEach((row, i) => {
    const v = row[cat.field];
    if (typeof v !== 'string' || v === '') throw new Error(`chart: row ${i} needs a name in ${JSON.stringify(cat.field)}, got ${String(v)}`);
    if (!seen.includes(v)) seen.push(v);
  });
  return seen;
}

/** Fixed colours for series: MODE_COLORS for modes, then the fallback palette in order. */
export function seriesColors(series: string[]): string[] {
  let next = 0;
  return series.map((s) => MODE_COLORS[s] ?? FALLBACK_COLORS[next++ % FALLBACK_COLORS.length]!);
}
