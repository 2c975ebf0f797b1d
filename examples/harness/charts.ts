// charts.ts — the demo's and the benchmarks' charts as Vega-Lite specifications, rendered to SVG in
// Node (no browser, no canvas): a builder (`bars`, `groupedBars`, `lines`) turns rows of results
// into a complete Vega-Lite spec with the data inline, and `writeChart` compiles it to Vega
// (vega-lite's `compile`), renders it with vega's headless View and writes three files side by side:
//   NAME.svg        the chart;
//   NAME.vl.json    the Vega-Lite spec, data included (`data.values`): re-plot it in the Vega editor
//                   or with `npx vl2svg NAME.vl.json > NAME.svg`;
//   NAME.data.json  the plotted rows alone.
// Every chart uses one font, one colour per mode (MODE_COLORS) and the legend outside the plot.
// Axis ticks are chosen here, not by Vega, so each axis has one number format.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vega from 'vega';
import type { LoggerInterface } from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';

/** One cell of a plotted row: a label, a number, or null for "not measured" (drawn as nothing). */
export type ChartValue = string | number | null;
/** One plotted row, e.g. { app: 'pd3-kv', mode: 'pd3', kops: 24.1 }. */
export type ChartRow = Record<string, ChartValue>;

/** A complete Vega-Lite spec whose data is inline: what the builders return and `writeChart` takes. */
export type ChartSpec = TopLevelSpec & { data: { values: ChartRow[] } };

/** The files `writeChart` wrote. */
export interface ChartFiles {
  svg: string;
  spec: string;
  data: string;
}

/** A fixed colour per mode, the same in every chart. Other series take FALLBACK_COLORS in order. */
export const MODE_COLORS: Readonly<Record<string, string>> = Object.freeze({
  local: '#59a14f',
  sync: '#e15759',
  async: '#f28e2b',
  leap: '#b07aa1',
  'pd3-noprefetch': '#76b7b2',
  pd3: '#4e79a7',
});
const FALLBACK_COLORS = ['#9c755f', '#edc948', '#ff9da7', '#bab0ac', '#1f77b4', '#8c564b'];

/** The font of every text in every chart (DejaVu Sans is what Debian's renderers have). */
export const CHART_FONT = 'DejaVu Sans, Arial, Helvetica, sans-serif';
const TITLE_SIZE = 15;
const SUBTITLE_SIZE = 12;
const LABEL_SIZE = 11;
const AXIS_TITLE_SIZE = 12;
const HEIGHT = 260;
const VEGA_LITE_SCHEMA = 'https://vega.github.io/schema/vega-lite/v6.json';

/** A quantitative axis: the field holding the numbers and its title, with units. */
export interface ValueAxis {
  field: string;
  /** Axis title with units, e.g. "throughput (kops/s)". */
  title: string;
  /** Log scale (base 10). Every value must then be > 0: zero or less is an error. */
  log?: boolean;
}

/** A categorical field: its name, its title (axis or legend) and the order of its values. */
export interface CategoryField {
  field: string;
  title: string;
  /** Order of the values; by default the order of first appearance in the rows. */
  order?: string[];
}

interface Titled {
  title: string;
  /** A second, smaller title line (sizes, settings). */
  subtitle?: string;
}

/** Bars, one per series value (the demo: one bar per mode), coloured by MODE_COLORS. */
export interface BarsOptions extends Titled {
  rows: ChartRow[];
  /** The bars' names; they label the x axis (no legend needed). */
  x: CategoryField;
  y: ValueAxis;
  /** Print each bar's value above it (d3-format; default by range). */
  valueLabels?: boolean | string;
}

/** Grouped bars: one group per category on x, one bar per series in each group, coloured by series. */
export interface GroupedBarsOptions extends Titled {
  rows: ChartRow[];
  /** The groups (e.g. the app). */
  x: CategoryField;
  /** The bars in each group and the legend (e.g. the mode). */
  color: CategoryField;
  y: ValueAxis;
}

/** A quantitative x axis for lines; `tickLabel` names each x value in the data (e.g. "64 KiB"). */
export interface LineXAxis extends ValueAxis {
  /** Label of a tick; with it the ticks are exactly the x values in the data. */
  tickLabel?: (x: number) => string;
}

/** Lines with points, one per series (sweeps). */
export interface LinesOptions extends Titled {
  rows: ChartRow[];
  x: LineXAxis;
  y: ValueAxis;
  color: CategoryField;
}

// ---- validation -------------------------------------------------------------------------------

function checkField(field: string, what: string): void {
  if (!/^[A-Za-z_][A-Za-z0-9_ -]*$/.test(field)) {
    throw new Error(`chart: ${what} field name ${JSON.stringify(field)} must be letters, digits, _, - or spaces (Vega-Lite reads . and [] as paths)`);
  }
}

function rowName(row: ChartRow, keys: string[]): string {
  return keys.map((k) => String(row[k])).join('/');
}

/** The numbers of `field` in the rows (nulls left out), after checking each row. */
function numbers(rows: ChartRow[], axis: ValueAxis, labelKeys: string[], what: string): number[] {
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
function categories(rows: ChartRow[], cat: CategoryField, what: string): string[] {
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

// ---- ticks and number formats -------------------------------------------------------------------

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

interface AxisTicks {
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

function axisTicks(values: number[], log: boolean | undefined): AxisTicks {
  return log ? logTicks(values) : linearTicks(values);
}

/** One format for the value labels on bars: enough decimals for the smallest value to show 2 digits. */
function labelFormat(values: number[]): string {
  const smallest = Math.min(...values.map(Math.abs).filter((v) => v > 0));
  if (!Number.isFinite(smallest) || smallest >= 100) return ',.0f';
  return smallest >= 10 ? ',.1f' : ',.2f';
}

// ---- text widths ------------------------------------------------------------------------------

// Vega lays out titles, axes and legends from text widths; in Node it has no canvas to measure them
// and guesses 0.8 em a character, which leaves wide empty margins. Charts are drawn in DejaVu Sans
// (Debian's default, what rsvg-convert and most Linux viewers use; Arial and Helvetica are
// narrower), so widths come from its advance widths, in 1/1000 em (fontTools, from DejaVuSans.ttf
// and DejaVuSans-Bold.ttf 2.37): ASCII 32-126, then the characters in EXTRA_CHARS. Any other
// character counts as 1 em.
const EXTRA_CHARS = 'µ×–—…·°';
const DEJAVU_REGULAR = decodeWidths('318,401,460,838,636,950,780,275,390,390,500,838,318,361,318,337,636,636,636,636,636,636,636,636,636,636,337,337,838,838,838,531,1000,684,686,698,770,632,575,775,752,295,295,656,557,863,748,787,603,787,695,635,611,732,684,989,685,611,685,390,337,390,838,500,500,613,635,550,635,615,352,635,634,278,278,579,278,974,634,612,635,635,411,521,392,634,592,818,592,592,525,636,337,636,838,636,838,500,1000,1000,318,500');
const DEJAVU_BOLD = decodeWidths('348,456,521,838,696,1002,872,306,457,457,523,838,380,415,380,365,696,696,696,696,696,696,696,696,696,696,400,400,838,838,838,580,1000,774,762,734,830,683,683,821,837,372,372,775,637,995,837,850,733,850,770,720,682,812,774,1103,771,724,725,457,365,457,838,500,500,675,716,593,716,678,435,716,712,343,343,665,343,1042,712,687,716,716,493,595,478,712,652,924,645,652,582,712,365,712,838,736,838,500,1000,1000,380,500');

function decodeWidths(list: string): Map<string, number> {
  const chars = [...Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)), ...EXTRA_CHARS];
  const widths = list.split(',').map(Number);
  if (widths.length !== chars.length) throw new Error('charts: width table does not match its characters');
  return new Map(chars.map((c, i) => [c, widths[i]!]));
}

/** Width in px of `text` in DejaVu Sans at `fontSize` px, 3% generous (no kerning counted). */
export function textWidth(text: string, fontSize: number, bold = false): number {
  const table = bold ? DEJAVU_BOLD : DEJAVU_REGULAR;
  let em = 0;
  for (const c of text) em += table.get(c) ?? 1000;
  return (em / 1000) * fontSize * 1.03;
}

/** What vega passes to a text measurer: a text item (font size and weight) and a line of text. */
interface TextItem {
  fontSize?: number | string | null;
  fontWeight?: number | string | null;
}
interface TextMetrics {
  width: (item: TextItem, text: unknown) => number;
}

function measure(item: TextItem, text: unknown): number {
  const size = item.fontSize === null || item.fontSize === undefined ? 11 : Number(item.fontSize) || 0;
  const w = item.fontWeight;
  const bold = w === 'bold' || w === 'bolder' || (typeof w === 'number' && w >= 600) || (typeof w === 'string' && Number(w) >= 600);
  return textWidth(text === null || text === undefined ? '' : String(text).trim(), size, bold);
}

// vega-scenegraph's text measurer (`textMetrics.width`, which it lets callers replace, as vl-convert
// does; vega's typings do not declare it): swapped in while a chart renders, put back after the
// last render in flight.
const metrics = (vega as unknown as { textMetrics: TextMetrics }).textMetrics;
let rendering = 0;
let savedWidth: TextMetrics['width'] | null = null;
function useDejaVuMetrics(on: boolean): void {
  if (on) {
    if (rendering++ === 0) {
      savedWidth = metrics.width;
      metrics.width = measure;
    }
  } else if (--rendering === 0 && savedWidth) {
    metrics.width = savedWidth;
    savedWidth = null;
  }
}

// ---- layout -------------------------------------------------------------------------------------

/** Plot width: at least `natural`, and wide enough for the title and subtitle above it. */
function plotWidth(o: Titled, natural: number): number {
  const title = textWidth(o.title, TITLE_SIZE, true);
  const subtitle = o.subtitle ? textWidth(o.subtitle, SUBTITLE_SIZE) : 0;
  // The title starts at the chart's left edge, ~50 px left of the plot (the y axis).
  return Math.ceil(Math.max(natural, title - 50, subtitle - 50, 200));
}

function titleBlock(o: Titled): TopLevelSpec['title'] {
  return o.subtitle ? { text: o.title, subtitle: o.subtitle } : { text: o.title };
}

/** Fonts, sizes and the frame shared by every chart; written into each spec so a re-plot matches. */
function config(): NonNullable<TopLevelSpec['config']> {
  return {
    font: CHART_FONT,
    background: 'white',
    padding: 12,
    title: {
      fontSize: TITLE_SIZE,
      fontWeight: 'bold',
      subtitleFontSize: SUBTITLE_SIZE,
      subtitleColor: '#444',
      anchor: 'start',
      frame: 'bounds',
      offset: 12,
      limit: 0,
    },
    axis: {
      labelFontSize: LABEL_SIZE,
      titleFontSize: AXIS_TITLE_SIZE,
      titleFontWeight: 'normal',
      titlePadding: 10,
      labelColor: '#222',
      titleColor: '#222',
      gridColor: '#e6e6e6',
      labelOverlap: false,
    },
    axisX: { labelAngle: 0, labelLimit: 0 },
    legend: {
      orient: 'right',
      labelFontSize: LABEL_SIZE,
      titleFontSize: AXIS_TITLE_SIZE,
      titleFontWeight: 'normal',
      labelLimit: 0,
      symbolSize: 120,
      offset: 16,
    },
    view: { stroke: '#bbb' },
  };
}

function quantitative(axis: ValueAxis, ticks: AxisTicks): Record<string, unknown> {
  return {
    field: axis.field,
    type: 'quantitative',
    title: axis.title,
    stack: null,
    scale: axis.log ? { type: 'log', domain: ticks.domain, nice: false } : { domain: ticks.domain, nice: false, zero: true },
    axis: { values: ticks.values, format: ticks.format, grid: true },
  };
}

// The builders assemble plain objects and hand them to Vega-Lite's checker through this one cast:
// the spec's shape is checked by `compile` (which rejects unknown structure) and by the tests.
function asSpec(spec: Record<string, unknown>, rows: ChartRow[]): ChartSpec {
  return { $schema: VEGA_LITE_SCHEMA, ...spec, data: { values: rows.map((r) => ({ ...r })) } } as unknown as ChartSpec;
}

// ---- builders -----------------------------------------------------------------------------------

/** One bar per x value (e.g. one per mode), coloured by MODE_COLORS, optionally labelled. */
export function bars(o: BarsOptions): ChartSpec {
  const names = categories(o.rows, o.x, 'x');
  const values = numbers(o.rows, o.y, [o.x.field], 'y');
  // Value labels sit above the bars: leave them room under the top of the axis.
  const top = Math.max(...values);
  const ticks = axisTicks(o.valueLabels ? [...values, o.y.log ? top * 1.8 : top * 1.12] : values, o.y.log);
  const step = 64;
  const encoding = {
    x: { field: o.x.field, type: 'nominal', title: o.x.title, sort: names, scale: { domain: names, paddingInner: 0.25, paddingOuter: 0.3 } },
    y: quantitative(o.y, ticks),
    color: { field: o.x.field, type: 'nominal', scale: { domain: names, range: seriesColors(names) }, legend: null },
    tooltip: [{ field: o.x.field, type: 'nominal' }, { field: o.y.field, type: 'quantitative', format: labelFormat(values) }],
  };
  const layer: Array<Record<string, unknown>> = [{ mark: { type: 'bar' } }];
  if (o.valueLabels) {
    const format = typeof o.valueLabels === 'string' ? o.valueLabels : labelFormat(values);
    layer.push({
      mark: { type: 'text', baseline: 'bottom', dy: -4, fontSize: LABEL_SIZE, color: '#222' },
      encoding: { text: { field: o.y.field, type: 'quantitative', format }, color: { value: '#222' } },
    });
  }
  return asSpec({
    title: titleBlock(o),
    width: plotWidth(o, names.length * step),
    height: HEIGHT,
    config: config(),
    encoding,
    layer,
  }, o.rows);
}

/** Grouped bars: x = category (app), one bar per series (mode) in each group, legend on the right. */
export function groupedBars(o: GroupedBarsOptions): ChartSpec {
  const groups = categories(o.rows, o.x, 'x');
  const series = categories(o.rows, o.color, 'color');
  const values = numbers(o.rows, o.y, [o.x.field, o.color.field], 'y');
  const ticks = axisTicks(values, o.y.log);
  const barStep = 16;
  const natural = groups.length * (series.length * barStep + 28);
  const encoding = {
    x: { field: o.x.field, type: 'nominal', title: o.x.title, sort: groups, scale: { domain: groups, paddingInner: 0.18, paddingOuter: 0.08 } },
    xOffset: { field: o.color.field, type: 'nominal', sort: series, scale: { domain: series, paddingInner: 0.08 } },
    y: quantitative(o.y, ticks),
    color: { field: o.color.field, type: 'nominal', title: o.color.title, sort: series, scale: { domain: series, range: seriesColors(series) } },
    tooltip: [
      { field: o.x.field, type: 'nominal' },
      { field: o.color.field, type: 'nominal' },
      { field: o.y.field, type: 'quantitative', format: labelFormat(values) },
    ],
  };
  return asSpec({
    title: titleBlock(o),
    width: plotWidth(o, natural),
    height: HEIGHT,
    config: config(),
    mark: { type: 'bar' },
    encoding,
  }, o.rows);
}

/** Lines with a point per row, one line per series; x may be log with named ticks (sweeps). */
export function lines(o: LinesOptions): ChartSpec {
  const series = categories(o.rows, o.color, 'color');
  const xs = numbers(o.rows, o.x, [o.color.field], 'x');
  const ys = numbers(o.rows, o.y, [o.color.field, o.x.field], 'y');
  const yTicks = axisTicks(ys, o.y.log);
  const xValues = [...new Set(xs)].sort((a, b) => a - b);
  let xScale: Record<string, unknown>;
  let xAxis: Record<string, unknown>;
  if (o.x.tickLabel) {
    // Ticks at the data's x values, named by tickLabel in a Vega expression (a nested conditional,
    // so the spec stays plain JSON); the domain padded so the end points sit off the frame.
    const label = o.x.tickLabel;
    const lo = xValues[0]!;
    const hi = xValues.at(-1)!;
    if (o.x.log) {
      const pad = Math.max(Math.log10(hi / lo), 1) * 0.06;
      xScale = { type: 'log', domain: [lo / 10 ** pad, hi * 10 ** pad], nice: false };
    } else {
      const pad = Math.max(hi - lo, Math.abs(hi) || 1) * 0.05;
      xScale = { domain: [lo - pad, hi + pad], nice: false, zero: false };
    }
    const expr = xValues.reduceRight((rest, v) => `datum.value == ${v} ? ${JSON.stringify(label(v))} : ${rest}`, "''");
    xAxis = { values: xValues, labelExpr: expr, grid: true };
  } else {
    const t = axisTicks(xs, o.x.log);
    xScale = o.x.log ? { type: 'log', domain: t.domain, nice: false } : { domain: t.domain, nice: false, zero: false };
    xAxis = { values: t.values, format: t.format, grid: true };
  }
  const encoding = {
    x: { field: o.x.field, type: 'quantitative', title: o.x.title, scale: xScale, axis: xAxis },
    y: quantitative(o.y, yTicks),
    color: { field: o.color.field, type: 'nominal', title: o.color.title, sort: series, scale: { domain: series, range: seriesColors(series) } },
    tooltip: [
      { field: o.color.field, type: 'nominal' },
      { field: o.x.field, type: 'quantitative' },
      { field: o.y.field, type: 'quantitative', format: labelFormat(ys) },
    ],
  };
  return asSpec({
    title: titleBlock(o),
    width: plotWidth(o, Math.max(360, xValues.length * 70)),
    height: HEIGHT,
    config: config(),
    mark: { type: 'line', point: { size: 50, filled: true }, strokeWidth: 2 },
    encoding,
  }, o.rows);
}

// ---- rendering ----------------------------------------------------------------------------------

/** Collects Vega-Lite's and Vega's warnings: a chart that warns is a chart to fix, so they throw. */
class StrictLogger implements LoggerInterface {
  private current = 2;
  readonly messages: string[] = [];
  level(): number;
  level(l: number): this;
  level(l?: number): number | this {
    if (l === undefined) return this.current;
    this.current = l;
    return this;
  }
  error(...args: unknown[]): this {
    this.messages.push(`error: ${args.map(String).join(' ')}`);
    return this;
  }
  warn(...args: unknown[]): this {
    this.messages.push(`warning: ${args.map(String).join(' ')}`);
    return this;
  }
  info(): this {
    return this;
  }
  debug(): this {
    return this;
  }
}

/** Compiles a Vega-Lite spec and renders it to SVG text with vega's headless View (no browser). */
export async function renderSvg(spec: ChartSpec): Promise<string> {
  const log = new StrictLogger();
  const vg = compile(spec, { logger: log }).spec;
  useDejaVuMetrics(true);
  const view = new vega.View(vega.parse(vg), { renderer: 'none', logger: log });
  try {
    const svg = await view.toSVG();
    if (log.messages.length > 0) throw new Error(`chart ${JSON.stringify(titleOf(spec))}: ${log.messages.join('; ')}`);
    return svg;
  } finally {
    view.finalize();
    useDejaVuMetrics(false);
  }
}

function titleOf(spec: ChartSpec): string {
  const t = spec.title;
  if (typeof t === 'string') return t;
  if (t && typeof t === 'object' && 'text' in t && typeof t.text === 'string') return t.text;
  return '';
}

/** Renders `spec` and writes DIR/NAME.svg, DIR/NAME.vl.json (the spec, data inline) and DIR/NAME.data.json. */
export async function writeChart(dir: string, name: string, spec: ChartSpec): Promise<ChartFiles> {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name)) throw new Error(`chart name ${JSON.stringify(name)}: letters, digits, ., _ and - only`);
  const svg = await renderSvg(spec);
  mkdirSync(dir, { recursive: true });
  const files: ChartFiles = {
    svg: join(dir, `${name}.svg`),
    spec: join(dir, `${name}.vl.json`),
    data: join(dir, `${name}.data.json`),
  };
  writeFileSync(files.svg, `${svg}\n`);
  writeFileSync(files.spec, `${JSON.stringify(spec, null, 2)}\n`);
  writeFileSync(files.data, `${JSON.stringify(spec.data.values, null, 2)}\n`);
  return files;
}
