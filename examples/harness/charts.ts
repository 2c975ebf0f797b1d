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
// The parts live in charts/: types.ts, rows.ts, ticks.ts, text-metrics.ts, builders.ts, render.ts.
export type { ChartValue, ChartRow, ChartSpec, ChartFiles, ValueAxis, CategoryField, BarsOptions, GroupedBarsOptions, LineXAxis, LinesOptions } from './charts/types.js';
export { MODE_COLORS, CHART_FONT } from './charts/types.js';
export { seriesColors } from './charts/rows.js';
export { textWidth } from './charts/text-metrics.js';
export { bars, groupedBars, lines } from './charts/builders.js';
export { renderSvg, writeChart } from './charts/render.js';
