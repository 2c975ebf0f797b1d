// types.ts — what a chart is made of: plotted rows, the spec type, the option types of the
// builders, and the look every chart shares (one font, fixed sizes, one colour per mode).
import type { TopLevelSpec } from 'vega-lite';

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
export const FALLBACK_COLORS = ['#9c755f', '#edc948', '#ff9da7', '#bab0ac', '#1f77b4', '#8c564b'];

/** The font of every text in every chart (DejaVu Sans is what Debian's renderers have). */
export const CHART_FONT = 'DejaVu Sans, Arial, Helvetica, sans-serif';
export const TITLE_SIZE = 15;
export const SUBTITLE_SIZE = 12;
export const LABEL_SIZE = 11;
export const AXIS_TITLE_SIZE = 12;
export const HEIGHT = 260;
export const VEGA_LITE_SCHEMA = 'https://vega.github.io/schema/vega-lite/v6.json';

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

export interface Titled {
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
