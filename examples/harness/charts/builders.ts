// builders.ts — rows of results into complete Vega-Lite specs with the data inline: one bar per
// category (`bars`), bars grouped by app and coloured by mode (`groupedBars`), sweeps (`lines`).
import type { TopLevelSpec } from 'vega-lite';
import { categories, numbers, seriesColors } from './rows.js';
import { textWidth } from './text-metrics.js';
import { type AxisTicks, axisTicks, labelFormat } from './ticks.js';
import { AXIS_TITLE_SIZE, type BarsOptions, CHART_FONT, type CategoryField, type ChartRow, type ChartSpec, type GroupedBarsOptions, HEIGHT, LABEL_SIZE, type LinesOptions, SUBTITLE_SIZE, TITLE_SIZE, type Titled, VEGA_LITE_SCHEMA, type ValueAxis } from './types.js';

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

/** The colour channel: one colour per series, each mode's the same in every chart. */
function colorChannel(cat: CategoryField, series: string[]): Record<string, unknown> {
  return { field: cat.field, type: 'nominal', title: cat.title, sort: series, scale: { domain: series, range: seriesColors(series) } };
}

/** A chart around its marks: the title, a plot at least `naturalWidth` wide, the shared look, the rows. */
function framed(o: Titled, naturalWidth: number, body: Record<string, unknown>, rows: ChartRow[]): ChartSpec {
  return asSpec({ title: titleBlock(o), width: plotWidth(o, naturalWidth), height: HEIGHT, config: config(), ...body }, rows);
}

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
  return framed(o, names.length * step, { encoding, layer }, o.rows);
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
    color: colorChannel(o.color, series),
    tooltip: [
      { field: o.x.field, type: 'nominal' },
      { field: o.color.field, type: 'nominal' },
      { field: o.y.field, type: 'quantitative', format: labelFormat(values) },
    ],
  };
  return framed(o, natural, { mark: { type: 'bar' }, encoding }, o.rows);
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
    color: colorChannel(o.color, series),
    tooltip: [
      { field: o.color.field, type: 'nominal' },
      { field: o.x.field, type: 'quantitative' },
      { field: o.y.field, type: 'quantitative', format: labelFormat(ys) },
    ],
  };
  return framed(o, Math.max(360, xValues.length * 70), { mark: { type: 'line', point: { size: 50, filled: true }, strokeWidth: 2 }, encoding }, o.rows);
}
