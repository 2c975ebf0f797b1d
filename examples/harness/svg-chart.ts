// svg-chart.ts — the benchmark charts, written as standalone SVG files in the paper's style:
// grouped bars (throughput per app and mode) and lines (a sweep). No dependencies.

/** One bar group: a category (an app) and a value per series (a mode). */
export interface BarGroup {
  name: string;
  values: Array<number | null>;
}

/** One line of a sweep: (x, y) points in x order. */
export interface LineSeries {
  name: string;
  points: Array<[number, number]>;
}

const PALETTE = ['#4c72b0', '#dd8452', '#55a868', '#c44e52', '#8172b3', '#937860', '#da8bc3', '#8c8c8c'];
const FONT = 'font-family="Helvetica,Arial,sans-serif"';

function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** A "nice" axis maximum and step for values up to `max`. */
function niceScale(max: number): { top: number; step: number } {
  if (!(max > 0)) return { top: 1, step: 0.25 };
  const raw = max / 5;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  return { top: Math.ceil(max / step) * step, step };
}

function fmt(v: number): string {
  if (v >= 100) return v.toFixed(0);
  if (v >= 10) return v.toFixed(1);
  return v.toPrecision(2);
}

/** Grouped bar chart: one group per category, one bar per series; null values are left blank. */
export function barChart(o: { title: string; yLabel: string; series: string[]; groups: BarGroup[]; log?: boolean }): string {
  const W = 160 + o.groups.length * (o.series.length * 22 + 30);
  const H = 360;
  const left = 70, right = W - 150, top = 40, bottom = H - 50;
  const all = o.groups.flatMap((g) => g.values).filter((v): v is number => v !== null && v > 0);
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">`);
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(`<text x="${W / 2}" y="22" text-anchor="middle" font-size="15" ${FONT}>${esc(o.title)}</text>`);
  // y axis: linear, or log10 when values span orders of magnitude.
  let y: (v: number) => number;
  const ticks: number[] = [];
  if (o.log && all.length > 0) {
    const lo = Math.floor(Math.log10(Math.min(...all)));
    const hi = Math.ceil(Math.log10(Math.max(...all)));
    const span = Math.max(1, hi - lo);
    y = (v) => bottom - ((Math.log10(Math.max(v, 10 ** lo)) - lo) / span) * (bottom - top);
    for (let e = lo; e <= lo + span; ++e) ticks.push(10 ** e);
  } else {
    const { top: maxV, step } = niceScale(all.length > 0 ? Math.max(...all) : 1);
    y = (v) => bottom - (v / maxV) * (bottom - top);
    for (let t = 0; t <= maxV + step / 2; t += step) ticks.push(t);
  }
  for (const t of ticks) {
    out.push(`<line x1="${left}" x2="${right}" y1="${y(t).toFixed(1)}" y2="${y(t).toFixed(1)}" stroke="#e0e0e0"/>`);
    out.push(`<text x="${left - 6}" y="${(y(t) + 4).toFixed(1)}" text-anchor="end" font-size="11" ${FONT}>${fmt(t)}</text>`);
  }
  out.push(`<text x="16" y="${(top + bottom) / 2}" transform="rotate(-90 16 ${(top + bottom) / 2})" text-anchor="middle" font-size="12" ${FONT}>${esc(o.yLabel)}</text>`);
  let x = left + 20;
  for (const g of o.groups) {
    const start = x;
    g.values.forEach((v, i) => {
      if (v !== null && v > 0) {
        const yy = y(v);
        out.push(`<rect x="${x}" y="${yy.toFixed(1)}" width="20" height="${(bottom - yy).toFixed(1)}" fill="${PALETTE[i % PALETTE.length]}"><title>${esc(`${g.name} ${o.series[i]}: ${fmt(v)}`)}</title></rect>`);
      }
      x += 22;
    });
    out.push(`<text x="${(start + x) / 2}" y="${bottom + 18}" text-anchor="middle" font-size="12" ${FONT}>${esc(g.name)}</text>`);
    x += 30;
  }
  out.push(`<line x1="${left}" x2="${right}" y1="${bottom}" y2="${bottom}" stroke="black"/>`);
  o.series.forEach((s, i) => {
    const ly = top + 8 + i * 18;
    out.push(`<rect x="${right + 12}" y="${ly - 9}" width="12" height="12" fill="${PALETTE[i % PALETTE.length]}"/>`);
    out.push(`<text x="${right + 30}" y="${ly + 1}" font-size="12" ${FONT}>${esc(s)}</text>`);
  });
  out.push('</svg>');
  return out.join('\n');
}

/** Line chart of sweeps; `logX` spaces x by powers of two (cache and zone sizes). */
export function lineChart(o: { title: string; xLabel: string; yLabel: string; series: LineSeries[]; logX?: boolean; xFormat?: (x: number) => string }): string {
  const W = 620, H = 360;
  const left = 70, right = W - 150, top = 40, bottom = H - 50;
  const xs = o.series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = o.series.flatMap((s) => s.points.map((p) => p[1]));
  const fx = (v: number): number => (o.logX ? Math.log2(Math.max(v, 1e-9)) : v);
  const x0 = xs.length ? Math.min(...xs.map(fx)) : 0, x1 = xs.length ? Math.max(...xs.map(fx)) : 1;
  const x = (v: number): number => left + ((fx(v) - x0) / Math.max(x1 - x0, 1e-9)) * (right - left);
  const { top: maxY, step } = niceScale(ys.length ? Math.max(...ys) : 1);
  const y = (v: number): number => bottom - (v / maxY) * (bottom - top);
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">`);
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(`<text x="${W / 2}" y="22" text-anchor="middle" font-size="15" ${FONT}>${esc(o.title)}</text>`);
  for (let t = 0; t <= maxY + step / 2; t += step) {
    out.push(`<line x1="${left}" x2="${right}" y1="${y(t).toFixed(1)}" y2="${y(t).toFixed(1)}" stroke="#e0e0e0"/>`);
    out.push(`<text x="${left - 6}" y="${(y(t) + 4).toFixed(1)}" text-anchor="end" font-size="11" ${FONT}>${fmt(t)}</text>`);
  }
  for (const v of [...new Set(xs)].sort((a, b) => a - b)) {
    out.push(`<text x="${x(v).toFixed(1)}" y="${bottom + 16}" text-anchor="middle" font-size="11" ${FONT}>${esc(o.xFormat ? o.xFormat(v) : fmt(v))}</text>`);
  }
  out.push(`<line x1="${left}" x2="${right}" y1="${bottom}" y2="${bottom}" stroke="black"/>`);
  out.push(`<text x="${(left + right) / 2}" y="${H - 12}" text-anchor="middle" font-size="12" ${FONT}>${esc(o.xLabel)}</text>`);
  out.push(`<text x="16" y="${(top + bottom) / 2}" transform="rotate(-90 16 ${(top + bottom) / 2})" text-anchor="middle" font-size="12" ${FONT}>${esc(o.yLabel)}</text>`);
  o.series.forEach((s, i) => {
    const color = PALETTE[i % PALETTE.length];
    const d = s.points.map(([px, py], k) => `${k === 0 ? 'M' : 'L'}${x(px).toFixed(1)},${y(py).toFixed(1)}`).join(' ');
    out.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="2"/>`);
    for (const [px, py] of s.points) out.push(`<circle cx="${x(px).toFixed(1)}" cy="${y(py).toFixed(1)}" r="3" fill="${color}"><title>${esc(`${s.name}: ${fmt(py)}`)}</title></circle>`);
    const ly = top + 8 + i * 18;
    out.push(`<line x1="${right + 12}" x2="${right + 26}" y1="${ly - 3}" y2="${ly - 3}" stroke="${color}" stroke-width="2"/>`);
    out.push(`<text x="${right + 30}" y="${ly + 1}" font-size="12" ${FONT}>${esc(s.name)}</text>`);
  });
  out.push('</svg>');
  return out.join('\n');
}
