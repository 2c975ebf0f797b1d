// metrics.ts — metric families and their Prometheus text exposition (format 0.0.4): HELP and TYPE
// lines, label escaping, cumulative histograms. Families are collected fresh at every scrape.

/** Label name → value. */
export type Labels = Readonly<Record<string, string>>;

/** One value of a counter or gauge. */
export interface Sample {
  labels?: Labels;
  value: number;
}

/** One histogram bucket: observations ≤ `le`, counted cumulatively. */
export interface Bucket {
  le: number;
  count: number;
}

/** One histogram series: cumulative buckets in increasing `le` (the +Inf bucket is `count`). */
export interface HistogramSeries {
  labels?: Labels;
  buckets: Bucket[];
  count: number;
  /** Sum of observations, when known (a native histogram of counts does not know it). */
  sum?: number;
}

/** A named metric with its help text and samples. Counter names end in "_total". */
export type MetricFamily =
  | { type: 'counter' | 'gauge'; name: string; help: string; samples: Sample[] }
  | { type: 'histogram'; name: string; help: string; series: HistogramSeries[] };

/** Content-Type of the exposition. */
export const EXPOSITION_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** A label value with backslash, double quote and line feed escaped. */
export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** HELP text with backslash and line feed escaped. */
export function escapeHelp(help: string): string {
  return help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/** A sample value: integers exactly, and NaN / +Inf / -Inf spelt as the format wants. */
export function formatValue(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (n === Infinity) return '+Inf';
  if (n === -Infinity) return '-Inf';
  return String(n);
}

function formatLabels(labels: Labels | undefined, extra?: [string, string]): string {
  const pairs = Object.entries(labels ?? {});
  if (extra) pairs.push(extra);
  if (pairs.length === 0) return '';
  for (const [k] of pairs) {
    if (!LABEL_NAME.test(k) || k.startsWith('__')) throw new Error(`invalid label name "${k}"`);
  }
  return `{${pairs.map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(',')}}`;
}

/** Turns per-bucket counts into cumulative buckets. `counts[i]` counts observations in
 *  (bounds[i-1], bounds[i]]; one more count at the end holds those above the last bound. */
export function cumulativeBuckets(
  bounds: readonly number[],
  counts: readonly number[],
): { buckets: Bucket[]; count: number } {
  if (counts.length !== bounds.length + 1) {
    throw new Error(`histogram: ${counts.length} counts for ${bounds.length} bounds (expected ${bounds.length + 1})`);
  }
  let running = 0;
  const buckets = bounds.map((le, i) => {
    running += counts[i]!;
    return { le, count: running };
  });
  return { buckets, count: running + counts[bounds.length]! };
}

function formatHistogram(name: string, s: HistogramSeries): string[] {
  if (s.labels && Object.hasOwn(s.labels, 'le')) throw new Error(`${name}: "le" is reserved in histograms`);
  const lines: string[] = [];
  let previous = -Infinity;
  let previousCount = 0;
  for (const b of s.buckets) {
    if (!(b.le > previous)) throw new Error(`${name}: bucket bounds must increase`);
    if (b.count < previousCount) throw new Error(`${name}: bucket counts must be cumulative`);
    previous = b.le;
    previousCount = b.count;
    lines.push(`${name}_bucket${formatLabels(s.labels, ['le', formatValue(b.le)])} ${formatValue(b.count)}`);
  }
  if (s.count < previousCount) throw new Error(`${name}: count is below the last bucket`);
  lines.push(`${name}_bucket${formatLabels(s.labels, ['le', '+Inf'])} ${formatValue(s.count)}`);
  if (s.sum !== undefined) lines.push(`${name}_sum${formatLabels(s.labels)} ${formatValue(s.sum)}`);
  lines.push(`${name}_count${formatLabels(s.labels)} ${formatValue(s.count)}`);
  return lines;
}

/** The text exposition of `families`. Throws on a malformed family (a programming error). */
export function formatExposition(families: readonly MetricFamily[]): string {
  const seen = new Set<string>();
  const lines: string[] = [];
  for (const f of families) {
    if (!METRIC_NAME.test(f.name)) throw new Error(`invalid metric name "${f.name}"`);
    if (seen.has(f.name)) throw new Error(`metric ${f.name} is defined twice`);
    seen.add(f.name);
    if (f.type === 'counter' && !f.name.endsWith('_total')) throw new Error(`counter ${f.name} must end in _total`);
    lines.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`);
    if (f.type === 'histogram') {
      for (const s of f.series) lines.push(...formatHistogram(f.name, s));
    } else {
      for (const s of f.samples) lines.push(`${f.name}${formatLabels(s.labels)} ${formatValue(s.value)}`);
    }
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

/** Produces families at scrape time. */
export type Collector = () => MetricFamily[];

/** The collectors of one process. */
export class MetricsRegistry {
  private readonly collectors: Collector[] = [];

  add(collector: Collector): void {
    this.collectors.push(collector);
  }

  collect(): MetricFamily[] {
    return this.collectors.flatMap((c) => c());
  }

  /** The text exposition of everything collected now. */
  expose(): string {
    return formatExposition(this.collect());
  }
}
