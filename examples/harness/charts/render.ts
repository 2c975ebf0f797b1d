// render.ts — a spec to SVG in Node with vega-lite's compile and vega's headless View (no browser),
// and the three files written beside each other: NAME.svg, NAME.vl.json, NAME.data.json.
import * as vega from 'vega';
import type { LoggerInterface } from 'vega';
import { compile } from 'vega-lite';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useDejaVuMetrics } from './text-metrics.js';
import type { ChartFiles, ChartSpec } from './types.js';

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
