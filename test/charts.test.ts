// charts.test.ts — examples/harness/charts.ts: each builder's Vega-Lite spec rendered to SVG in Node
// into a temporary directory, and what a reader relies on checked in the SVG text: well-formed,
// the title whole and inside the picture, every series in a legend that sits right of the plot, one
// number format per axis, fixed colours per mode, the spec and data files round-tripping, and the
// value checks (log scales refuse values ≤ 0, null is "not measured" and draws nothing, a missing
// or non-finite value is an error). With rsvg-convert on PATH (Debian: librsvg2-bin) the SVGs are
// also rendered to PNG at the size they declare.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  MODE_COLORS, bars, groupedBars, lines, renderSvg, seriesColors, textWidth, writeChart,
  type ChartRow, type ChartSpec,
} from '../dist/examples/harness/charts.js';
import { optionalProgram } from './optional-program.js';

const dir = mkdtempSync(join(tmpdir(), 'pd3-charts-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const MODES = ['local', 'sync', 'async', 'leap', 'pd3-noprefetch', 'pd3'];
const KOPS: Record<string, number[]> = {
  'pd3-kv': [163.7, 24.9, 38.7, 25.2, 3.3, 24.1],
  hashmap: [428.1, 42.4, 85.0, 35.1, 11.3, 30.5],
  'page-server': [5.8, 2.5, 4.7, 2.6, 0.7, 3.4],
};
const groupedRows = (): ChartRow[] =>
  Object.entries(KOPS).flatMap(([app, values]) => values.map((kops, i): ChartRow => ({ app, mode: MODES[i]!, kops })));
const grouped = (rows: ChartRow[], log = true): ChartSpec => groupedBars({
  title: 'Throughput, YCSB-B uniform, 1% local cache', subtitle: '200,000 records, 5 s per run',
  rows, x: { field: 'app', title: 'app' }, color: { field: 'mode', title: 'mode', order: MODES },
  y: { field: 'kops', title: 'throughput (kops/s, log scale)', log },
});
const demoRows: ChartRow[] = [{ mode: 'local', kops: 38.467 }, { mode: 'sync', kops: 5.3088 }, { mode: 'pd3', kops: 6.942 }];
const demo = (): ChartSpec => bars({
  title: 'pd3-kv throughput, YCSB-B uniform, 1% local cache', subtitle: '5,000 records of 100 B, 1 s per mode',
  rows: demoRows, x: { field: 'mode', title: 'mode' }, y: { field: 'kops', title: 'throughput (k requests/s)' }, valueLabels: ',.1f',
});
const cacheRows: ChartRow[] = [[0.25, 25.2, 21.8], [1, 25.2, 23.8], [4, 24.7, 24.9], [16, 28.7, 26.9], [100, 101.5, 52.0]]
  .flatMap(([p, s, d]) => [{ cache_percent: p!, mode: 'sync', kops: s! }, { cache_percent: p!, mode: 'pd3', kops: d! }]);
const sweep = (rows: ChartRow[]): ChartSpec => lines({
  title: 'pd3-kv throughput vs local cache size (Fig. 21)', rows,
  x: { field: 'cache_percent', title: 'local cache (% of the data, log scale)', log: true, tickLabel: (x) => `${x}%` },
  y: { field: 'kops', title: 'throughput (kops/s)' }, color: { field: 'mode', title: 'mode' },
});
const sizeLabel = (b: number): string => (b >= 1 << 20 ? `${b / (1 << 20)} MiB` : `${b / 1024} KiB`);

// ---- reading the SVG text -----------------------------------------------------------------------

/** Throws unless every tag is closed in order (enough to catch broken escaping or truncation). */
function checkWellFormed(svg: string): void {
  const stack: string[] = [];
  for (const m of svg.matchAll(/<(\/?)([A-Za-z][\w:-]*)(?:\s[^<>]*?)?(\/?)>/g)) {
    const [, close, name, selfClose] = m;
    if (selfClose) continue;
    if (close) {
      const open = stack.pop();
      if (open !== name) throw new Error(`</${name}> closes <${open}>`);
    } else {
      stack.push(name!);
    }
  }
  expect(stack).toEqual([]);
  expect(svg.replace(/<[^>]*>/g, '')).not.toMatch(/[<>]|&(?!(amp|lt|gt|quot|#\d+);)/);
}

const unescape = (t: string): string => t.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&amp;/g, '&');

/** The text of every <text> element in `fragment`, in order. */
function texts(fragment: string): string[] {
  return [...fragment.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => unescape(m[1]!));
}

/** The markup of the first group whose opening tag matches `marker`, up to its closing tag. */
function group(svg: string, marker: RegExp): string {
  const start = svg.search(marker);
  expect(start, `no ${marker} in the SVG`).toBeGreaterThanOrEqual(0);
  let depth = 0;
  for (const m of svg.slice(start).matchAll(/<(\/?)g\b[^>]*>/g)) {
    depth += m[1] ? -1 : 1;
    if (depth === 0) return svg.slice(start, start + m.index + m[0].length);
  }
  throw new Error(`unclosed group ${marker}`);
}

function size(svg: string): { width: number; height: number } {
  const m = /^<svg[^>]* width="(\d+(?:\.\d+)?)" height="(\d+(?:\.\d+)?)"/.exec(svg);
  expect(m, 'the <svg> element has a width and height').not.toBeNull();
  return { width: Number(m![1]), height: Number(m![2]) };
}

/** First translate(x,y) inside a group. */
function translate(fragment: string): [number, number] {
  const m = /translate\((-?[\d.]+),(-?[\d.]+)\)/.exec(fragment);
  expect(m).not.toBeNull();
  return [Number(m![1]), Number(m![2])];
}

/** Checks the title is drawn whole inside the picture; returns the SVG's text. */
function checkTitle(svg: string, title: string, subtitle?: string): void {
  const { width } = size(svg);
  const [rootX] = translate(svg);  // the chart's padding
  const block = group(svg, /<g class="mark-group role-title"/);
  const [dx] = translate(block);
  const drawn = texts(block);
  expect(drawn[0]).toBe(title);  // whole, not cut with an ellipsis
  if (subtitle) expect(drawn[1]).toBe(subtitle);
  const left = rootX + dx;
  expect(left).toBeGreaterThanOrEqual(0);
  expect(left + textWidth(title, 15, true)).toBeLessThanOrEqual(width);
  if (subtitle) expect(left + textWidth(subtitle, 12)).toBeLessThanOrEqual(width);
  expect(svg).not.toContain('…');
}

/** Plot width (the frame) and the legend's texts and left edge, both in the plot's coordinates. */
function legendOf(svg: string, spec: ChartSpec): { x: number; labels: string[] } {
  const legend = group(svg, /<g class="mark-group role-legend"/);
  const [x] = translate(legend);
  expect(x, 'legend left of the plot\'s right edge').toBeGreaterThanOrEqual(Number(spec.width));
  return { x, labels: texts(legend) };
}

/** The y axis's tick labels. */
function yLabels(svg: string): string[] {
  const axis = group(svg, /<g class="mark-group role-axis" [^>]*aria-label="Y-axis/);
  return texts(group(axis, /<g class="mark-text role-axis-label"/));
}

function xLabels(svg: string): string[] {
  const axis = group(svg, /<g class="mark-group role-axis" [^>]*aria-label="X-axis/);
  return texts(group(axis, /<g class="mark-text role-axis-label"/));
}

const barCount = (svg: string): number => svg.split('aria-roledescription="bar"').length - 1;

// ---- the tests ----------------------------------------------------------------------------------

describe('charts: Vega-Lite specs rendered to SVG in Node', () => {
  it('bars (the demo): three files, title whole, bars in mode colours with value labels, one y format', async () => {
    const spec = demo();
    const files = await writeChart(dir, 'demo', spec);
    expect(files).toEqual({ svg: join(dir, 'demo.svg'), spec: join(dir, 'demo.vl.json'), data: join(dir, 'demo.data.json') });
    for (const f of Object.values(files)) expect(existsSync(f)).toBe(true);
    const svg = readFileSync(files.svg, 'utf8');
    expect(svg.startsWith('<svg')).toBe(true);
    checkWellFormed(svg);
    checkTitle(svg, 'pd3-kv throughput, YCSB-B uniform, 1% local cache', '5,000 records of 100 B, 1 s per mode');
    expect(xLabels(svg)).toEqual(['local', 'sync', 'pd3']);
    expect(yLabels(svg)).toEqual(['0', '10', '20', '30', '40', '50']);  // 38.5 + room for its label
    expect(barCount(svg)).toBe(3);
    for (const m of ['local', 'sync', 'pd3']) expect(svg).toContain(`fill="${MODE_COLORS[m]}"`);
    for (const label of ['38.5', '5.3', '6.9']) expect(texts(svg)).toContain(label);
    expect(svg).toContain('throughput (k requests/s)');

    const vl = JSON.parse(readFileSync(files.spec, 'utf8')) as { $schema: string; data: { values: ChartRow[] } };
    expect(vl.$schema).toMatch(/vega-lite\/v6/);
    expect(vl.data.values).toEqual(demoRows);
    expect(JSON.parse(readFileSync(files.data, 'utf8'))).toEqual(demoRows);
    // The written spec renders again to the same picture (what a user re-plotting gets here).
    expect(await renderSvg(vl as unknown as ChartSpec)).toBe(svg.trimEnd());
  });

  it('grouped bars on a log scale: every app and mode, legend right of the plot, powers of ten', async () => {
    const rows = groupedRows();
    const spec = grouped(rows);
    const files = await writeChart(dir, 'throughput', spec);
    const svg = readFileSync(files.svg, 'utf8');
    checkWellFormed(svg);
    checkTitle(svg, 'Throughput, YCSB-B uniform, 1% local cache', '200,000 records, 5 s per run');
    const legend = legendOf(svg, spec);
    expect(legend.labels).toEqual([...MODES, 'mode']);
    expect(xLabels(svg)).toEqual(['pd3-kv', 'hashmap', 'page-server']);
    expect(yLabels(svg)).toEqual(['0.1', '1', '10', '100', '1,000']);
    expect(svg).toContain('throughput (kops/s, log scale)');
    expect(barCount(svg)).toBe(18);
    for (const m of MODES) expect(svg).toContain(`fill="${MODE_COLORS[m]}"`);
    expect(JSON.parse(readFileSync(files.spec, 'utf8')).data.values).toEqual(rows);
    expect(JSON.parse(readFileSync(files.data, 'utf8'))).toEqual(rows);
  });

  it('grouped bars, linear: one decimal count on the axis', async () => {
    const rows: ChartRow[] = [
      { app: 'a', mode: 'sync', v: 0.35 }, { app: 'a', mode: 'pd3', v: 1.2 },
      { app: 'b', mode: 'sync', v: 0.8 }, { app: 'b', mode: 'pd3', v: 0.05 },
    ];
    const svg = await renderSvg(groupedBars({ title: 'linear', rows, x: { field: 'app', title: 'app' }, color: { field: 'mode', title: 'mode' }, y: { field: 'v', title: 'v (s)' } }));
    const labels = yLabels(svg);
    expect(labels).toEqual(['0.0', '0.2', '0.4', '0.6', '0.8', '1.0', '1.2']);
  });

  it('lines (sweeps): named ticks on a log x, a line and points per series, fixed colours', async () => {
    const spec = sweep(cacheRows);
    const files = await writeChart(dir, 'cache-sweep', spec);
    const svg = readFileSync(files.svg, 'utf8');
    checkWellFormed(svg);
    checkTitle(svg, 'pd3-kv throughput vs local cache size (Fig. 21)');
    expect(legendOf(svg, spec).labels).toEqual(['sync', 'pd3', 'mode']);
    expect(xLabels(svg)).toEqual(['0.25%', '1%', '4%', '16%', '100%']);
    expect(yLabels(svg)).toEqual(['0', '20', '40', '60', '80', '100', '120']);
    expect(svg).toContain(`stroke="${MODE_COLORS.sync}"`);
    expect(svg).toContain(`stroke="${MODE_COLORS.pd3}"`);
    expect(svg.split('aria-roledescription="line mark"').length - 1).toBe(2);
    expect(JSON.parse(readFileSync(files.spec, 'utf8')).data.values).toEqual(cacheRows);

    const zone = [64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20].map((b, i): ChartRow => ({ zone_bytes: b, mode: 'pd3', kops: 21 + i }));
    const zsvg = await renderSvg(lines({
      title: 'zone', rows: zone, x: { field: 'zone_bytes', title: 'Loading Zone size', log: true, tickLabel: sizeLabel },
      y: { field: 'kops', title: 'kops/s' }, color: { field: 'mode', title: 'mode' },
    }));
    expect(xLabels(zsvg)).toEqual(['64 KiB', '256 KiB', '1 MiB', '4 MiB', '16 MiB']);

    // Without tickLabel: ticks and one format chosen from the range, on x as on y.
    const plain = [0.5, 1, 1.5, 2, 2.5].map((x): ChartRow => ({ t: x, series: 'a', v: x * 1000 }));
    const psvg = await renderSvg(lines({
      title: 'plain', rows: plain, x: { field: 't', title: 't (s)' }, y: { field: 'v', title: 'v (ops)' }, color: { field: 'series', title: 'series' },
    }));
    expect(xLabels(psvg)).toEqual(['0.0', '0.5', '1.0', '1.5', '2.0', '2.5']);
    expect(yLabels(psvg)).toEqual(['0', '500', '1,000', '1,500', '2,000', '2,500']);
  });

  it('one colour per mode in every chart; other series get the fallback colours', () => {
    expect(seriesColors(['pd3'])).toEqual([MODE_COLORS.pd3]);
    expect(seriesColors(['sync', 'pd3'])).toEqual([MODE_COLORS.sync, MODE_COLORS.pd3]);
    expect(seriesColors(['pd3', 'local'])).toEqual([MODE_COLORS.pd3, MODE_COLORS.local]);
    const other = seriesColors(['x', 'pd3', 'y']);
    expect(other[1]).toBe(MODE_COLORS.pd3);
    expect(new Set([...other, ...Object.values(MODE_COLORS)]).size).toBe(Object.keys(MODE_COLORS).length + 2);
    const spec = grouped(groupedRows()) as unknown as { encoding: { color: { scale: { domain: string[]; range: string[] } } } };
    expect(spec.encoding.color.scale.domain).toEqual(MODES);
    expect(spec.encoding.color.scale.range).toEqual(MODES.map((m) => MODE_COLORS[m]));
  });

  it('log scales refuse zero and negative values with a clear error', () => {
    const zero = groupedRows().map((r) => (r.app === 'hashmap' && r.mode === 'leap' ? { ...r, kops: 0 } : r));
    expect(() => grouped(zero)).toThrow(/kops of hashmap\/leap is 0: a log scale needs values > 0/);
    const negative = cacheRows.map((r, i) => (i === 0 ? { ...r, cache_percent: -1 } : r));
    expect(() => sweep(negative)).toThrow(/cache_percent of sync is -1: a log scale needs values > 0/);
    expect(() => grouped(zero, false)).not.toThrow();  // zero is fine on a linear scale
  });

  it('null is "not measured": kept in the data, no bar drawn; missing or non-finite values are errors', async () => {
    const rows = groupedRows().map((r) => (r.mode === 'leap' ? { ...r, kops: null } : r));
    const spec = grouped(rows);
    const files = await writeChart(dir, 'with-null', spec);
    const svg = readFileSync(files.svg, 'utf8');
    expect(barCount(svg)).toBe(15);
    expect(legendOf(svg, spec).labels).toEqual([...MODES, 'mode']);  // leap still named, in its place
    expect(JSON.parse(readFileSync(files.data, 'utf8'))).toEqual(rows);

    const missing = groupedRows().map((r, i) => (i === 4 ? { app: r.app, mode: r.mode } : r)) as ChartRow[];
    expect(() => grouped(missing)).toThrow(/row 4 \(pd3-kv\/pd3-noprefetch\) has no "kops": use null/);
    const nan = groupedRows().map((r, i) => (i === 2 ? { ...r, kops: Number.NaN } : r));
    expect(() => grouped(nan, false)).toThrow(/kops of pd3-kv\/async is NaN, not a finite number/);
    const allNull = groupedRows().map((r) => ({ ...r, kops: null }));
    expect(() => grouped(allNull)).toThrow(/no kops values to plot/);
    expect(() => grouped([{ app: 'a', mode: 7, kops: 1 }])).toThrow(/needs a name in "mode"/);
  });

  it('escapes text, refuses field paths and bad file names', async () => {
    const svg = await renderSvg(bars({ title: 'a <b> & "c"', rows: [{ mode: 'x<y', v: 1 }], x: { field: 'mode', title: 'm' }, y: { field: 'v', title: 'v' } }));
    checkWellFormed(svg);
    expect(texts(svg)).toContain('a <b> & "c"');
    expect(texts(svg)).toContain('x<y');
    expect(() => bars({ title: 't', rows: [{ 'a.b': 'x', v: 1 }], x: { field: 'a.b', title: 'm' }, y: { field: 'v', title: 'v' } }))
      .toThrow(/field name "a.b"/);
    await expect(writeChart(dir, '../escape', demo())).rejects.toThrow(/chart name/);
  });

  const rsvg = optionalProgram({ name: 'rsvg-convert', debianPackage: 'librsvg2-bin', needs: 'the charts rendered to PNG' });
  it.skipIf(!rsvg)('rsvg-convert renders each SVG to a PNG of the declared size (skipped without librsvg2-bin)', async () => {
    for (const name of ['demo', 'throughput', 'cache-sweep', 'with-null']) {
      const svgPath = join(dir, `${name}.svg`);
      if (!existsSync(svgPath)) await writeChart(dir, name, name === 'demo' ? demo() : name === 'cache-sweep' ? sweep(cacheRows) : grouped(groupedRows()));
      const png = join(dir, `${name}.png`);
      const r = spawnSync(rsvg!, ['-o', png, svgPath], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      const bytes = readFileSync(png);
      expect(bytes.subarray(1, 4).toString('latin1')).toBe('PNG');
      const { width, height } = size(readFileSync(svgPath, 'utf8'));
      expect([bytes.readUInt32BE(16), bytes.readUInt32BE(20)]).toEqual([Math.ceil(width), Math.ceil(height)]);
    }
  });
});
