// stat-metrics.ts — turns a native stats snapshot (name → number) into metric families by a table,
// so each deployable's metric names are declared in one place.
import type { Labels, MetricFamily, Sample } from './metrics.js';

/** One native stat and the metric sample it becomes. Several stats may feed one family with
 *  different labels (reads/writes → requests_total{op}). */
export interface StatMetric {
  /** The native stat's name. */
  stat: string;
  name: string;
  type: 'counter' | 'gauge';
  help: string;
  labels?: Labels;
}

function sanitize(name: string): string {
  return name.replace(/[^a-zA-Z0-9_]/g, '_');
}

/** Families for `stats` by `table`. Stats missing from the snapshot give no sample; stats the
 *  table does not know are still exported, as gauges `<prefix>_<stat>`, so a stat added natively
 *  shows up before its table entry does. */
export function familiesFromStats(
  table: readonly StatMetric[],
  stats: Readonly<Record<string, number>>,
  prefix: string,
): MetricFamily[] {
  const families = new Map<string, { type: 'counter' | 'gauge'; name: string; help: string; samples: Sample[] }>();
  const used = new Set<string>();
  for (const m of table) {
    let family = families.get(m.name);
    if (family === undefined) {
      family = { type: m.type, name: m.name, help: m.help, samples: [] };
      families.set(m.name, family);
    }
    const value = stats[m.stat];
    if (value === undefined) continue;
    used.add(m.stat);
    family.samples.push(m.labels ? { labels: m.labels, value } : { value });
  }
  const out: MetricFamily[] = [...families.values()].filter((f) => f.samples.length > 0);
  for (const [stat, value] of Object.entries(stats)) {
    const name = `${prefix}_${sanitize(stat)}`;
    if (used.has(stat) || families.has(name)) continue;
    out.push({
      type: 'gauge',
      name,
      help: `Native stat "${stat}" (not yet described in the metric table).`,
      samples: [{ value }],
    });
  }
  return out;
}
