// cli-metrics.test.ts — the Prometheus text exposition (HELP/TYPE, label escaping, cumulative
// histograms, _total counters) read back by a small parser; the memserver and agent metric tables;
// the /metrics and /healthz endpoint; the JSON log lines.
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { agentFamilies } from '../dist/dpu/agent-metrics.js';
import { Logger } from '../dist/cli/logger.js';
import { MEMSERVER_BATCH_HISTOGRAM, memServerFamilies } from '../dist/memserver/metrics.js';
import { MetricsServer } from '../dist/cli/metrics-server.js';
import {
  cumulativeBuckets,
  escapeLabelValue,
  formatExposition,
  MetricsRegistry,
  type MetricFamily,
} from '../dist/cli/metrics.js';

/** One sample line, parsed. */
interface ParsedSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A parsed exposition: HELP and TYPE by family, samples in order. */
interface Parsed {
  help: Map<string, string>;
  type: Map<string, string>;
  samples: ParsedSample[];
}

/** Parses the text format strictly enough to catch formatting mistakes: every line is a comment
 *  or a sample, label values are unescaped, and every sample belongs to a family declared above. */
function parseExposition(text: string): Parsed {
  const out: Parsed = { help: new Map(), type: new Map(), samples: [] };
  expect(text.endsWith('\n')).toBe(true);
  for (const line of text.slice(0, -1).split('\n')) {
    let m = /^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
    if (m) {
      out.help.set(
        m[1]!,
        m[2]!.replace(/\\(\\|n)/g, (_, c: string) => (c === 'n' ? '\n' : '\\')),
      );
      continue;
    }
    m = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (m) {
      expect(out.type.has(m[1]!), `TYPE ${m[1]} twice`).toBe(false);
      out.type.set(m[1]!, m[2]!);
      continue;
    }
    m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$/.exec(line);
    expect(m, `not a sample line: ${line}`).not.toBeNull();
    const labels: Record<string, string> = {};
    const body = m![2]?.slice(1, -1) ?? '';
    const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/y;
    let consumed = 0;
    for (let l = re.exec(body); l !== null; l = re.exec(body)) {
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
      consumed = re.lastIndex;
    }
    expect(consumed, `malformed labels in ${line}`).toBe(body.length);
    const name = m![1]!;
    const family = [name, name.replace(/_(bucket|sum|count)$/, '')].find((n) => out.type.has(n));
    expect(family, `sample ${name} has no TYPE above it`).toBeDefined();
    expect(out.help.has(family!), `family ${family} has no HELP`).toBe(true);
    const v = m![3]!;
    out.samples.push({ name, labels, value: v === '+Inf' ? Infinity : v === '-Inf' ? -Infinity : Number(v) });
  }
  for (const [name, type] of out.type) if (type === 'counter') expect(name).toMatch(/_total$/);
  return out;
}

function value(p: Parsed, name: string, labels: Record<string, string> = {}): number | undefined {
  return p.samples.find((s) => s.name === name && JSON.stringify(s.labels) === JSON.stringify(labels))?.value;
}

describe('exposition format', () => {
  it('writes HELP, TYPE and samples that parse back', () => {
    const families: MetricFamily[] = [
      {
        type: 'counter',
        name: 'x_requests_total',
        help: 'Requests.',
        samples: [
          { labels: { op: 'read' }, value: 3 },
          { labels: { op: 'write' }, value: 4 },
        ],
      },
      {
        type: 'gauge',
        name: 'x_temperature',
        help: 'Hot.',
        samples: [{ value: 21.5 }, { labels: { where: 'max' }, value: Infinity }],
      },
      { type: 'gauge', name: 'x_nan', help: 'Not a number.', samples: [{ value: NaN }] },
    ];
    const text = formatExposition(families);
    expect(text).toContain('# HELP x_requests_total Requests.\n# TYPE x_requests_total counter\n');
    expect(text).toContain('x_requests_total{op="read"} 3\n');
    const p = parseExposition(text);
    expect(value(p, 'x_requests_total', { op: 'write' })).toBe(4);
    expect(value(p, 'x_temperature')).toBe(21.5);
    expect(value(p, 'x_temperature', { where: 'max' })).toBe(Infinity);
    expect(text).toContain('x_nan NaN\n');
    expect(formatExposition([])).toBe('');
  });

  it('escapes label values and help text', () => {
    const nasty = 'a"b\\c\nd}{,=';
    expect(escapeLabelValue(nasty)).toBe('a\\"b\\\\c\\nd}{,=');
    const text = formatExposition([
      {
        type: 'gauge',
        name: 'x_g',
        help: 'line one\nback\\slash "quoted"',
        samples: [{ labels: { server: nasty, b: '' }, value: 1 }],
      },
    ]);
    expect(text.split('\n')).toHaveLength(4); // HELP, TYPE, one sample, and the final newline: no raw line feeds
    const p = parseExposition(text);
    expect(p.samples[0]!.labels).toEqual({ server: nasty, b: '' });
    expect(p.help.get('x_g')).toBe('line one\nback\\slash "quoted"');
  });

  it('writes histograms as cumulative buckets with +Inf, _count and (when known) _sum', () => {
    const { buckets, count } = cumulativeBuckets([1, 2, 4], [1, 0, 2, 3]);
    expect(buckets).toEqual([
      { le: 1, count: 1 },
      { le: 2, count: 1 },
      { le: 4, count: 3 },
    ]);
    expect(count).toBe(6);
    const p = parseExposition(
      formatExposition([
        {
          type: 'histogram',
          name: 'x_batch',
          help: 'Sizes.',
          series: [{ labels: { s: 'a' }, buckets, count, sum: 17 }],
        },
      ]),
    );
    expect(p.samples.map((s) => [s.name, s.labels.le ?? null, s.value])).toEqual([
      ['x_batch_bucket', '1', 1],
      ['x_batch_bucket', '2', 1],
      ['x_batch_bucket', '4', 3],
      ['x_batch_bucket', '+Inf', 6],
      ['x_batch_sum', null, 17],
      ['x_batch_count', null, 6],
    ]);
    expect(() => cumulativeBuckets([1, 2], [1, 2])).toThrow(/3/);
  });

  it('refuses malformed families', () => {
    const g = (name: string): MetricFamily => ({ type: 'gauge', name, help: 'h', samples: [{ value: 1 }] });
    expect(() => formatExposition([{ type: 'counter', name: 'x_requests', help: 'h', samples: [] }])).toThrow(/_total/);
    expect(() => formatExposition([g('9lives')])).toThrow(/invalid metric name/);
    expect(() => formatExposition([g('x_a'), g('x_a')])).toThrow(/twice/);
    expect(() =>
      formatExposition([
        { type: 'gauge', name: 'x_a', help: 'h', samples: [{ labels: { 'bad-name': 'v' }, value: 1 }] },
      ]),
    ).toThrow(/label name/);
    expect(() =>
      formatExposition([{ type: 'gauge', name: 'x_a', help: 'h', samples: [{ labels: { __x: 'v' }, value: 1 }] }]),
    ).toThrow(/label name/);
    const h = (
      buckets: Array<{ le: number; count: number }>,
      count: number,
      labels?: Record<string, string>,
    ): MetricFamily => ({
      type: 'histogram',
      name: 'x_h',
      help: 'h',
      series: [{ labels, buckets, count }],
    });
    expect(() =>
      formatExposition([
        h(
          [
            { le: 2, count: 1 },
            { le: 1, count: 1 },
          ],
          1,
        ),
      ]),
    ).toThrow(/increase/);
    expect(() =>
      formatExposition([
        h(
          [
            { le: 1, count: 2 },
            { le: 2, count: 1 },
          ],
          2,
        ),
      ]),
    ).toThrow(/cumulative/);
    expect(() => formatExposition([h([{ le: 1, count: 2 }], 1)])).toThrow(/count/);
    expect(() => formatExposition([h([], 0, { le: 'x' })])).toThrow(/reserved/);
  });

  it('collects from every registered collector at each scrape', () => {
    const r = new MetricsRegistry();
    let n = 0;
    r.add(() => [{ type: 'counter', name: 'x_scrapes_total', help: 'Scrapes.', samples: [{ value: ++n }] }]);
    r.add(() => [{ type: 'gauge', name: 'x_up', help: 'Up.', samples: [{ value: 1 }] }]);
    expect(value(parseExposition(r.expose()), 'x_scrapes_total')).toBe(1);
    const p = parseExposition(r.expose());
    expect(value(p, 'x_scrapes_total')).toBe(2);
    expect(value(p, 'x_up')).toBe(1);
  });
});

describe('memory server and agent metrics', () => {
  it('maps memory server stats and the batch histogram', () => {
    const histogram = Array.from({ length: 14 }, (_, i) => (i === 0 ? 5 : i === 3 ? 2 : i === 13 ? 1 : 0));
    const p = parseExposition(
      formatExposition(
        memServerFamilies(
          {
            reads: 10,
            writes: 4,
            prefetches: 2,
            controls: 1,
            bytes_in: 1000,
            bytes_out: 2000,
            read_bytes: 640,
            write_bytes: 256,
            errors: 3,
            prefetch_not_found: 1,
            protocol_errors: 1,
            auth_failures: 2,
            syncs: 7,
            connections: 1,
            connections_total: 5,
            regions: 2,
            allocated_bytes: 4096,
            capacity: 1 << 20,
            index_keys: 9,
            index_bytes: 4096,
            too_big_records: 2,
            brand_new_stat: 42,
          },
          histogram,
        ),
      ),
    );
    for (const [op, n] of [
      ['read', 10],
      ['write', 4],
      ['prefetch', 2],
      ['control', 1],
    ] as const) {
      expect(value(p, 'pd3_memserver_requests_total', { op })).toBe(n);
    }
    expect(p.type.get('pd3_memserver_requests_total')).toBe('counter');
    expect(value(p, 'pd3_memserver_received_bytes_total')).toBe(1000);
    expect(value(p, 'pd3_memserver_sent_bytes_total')).toBe(2000);
    expect(value(p, 'pd3_memserver_auth_failures_total')).toBe(2);
    expect(value(p, 'pd3_memserver_protocol_errors_total')).toBe(1);
    expect(value(p, 'pd3_memserver_too_big_records_total')).toBe(2);
    expect(value(p, 'pd3_memserver_connections')).toBe(1);
    expect(value(p, 'pd3_memserver_accepted_connections_total')).toBe(5);
    expect(value(p, 'pd3_memserver_capacity_bytes')).toBe(1 << 20);
    expect(p.type.get('pd3_memserver_capacity_bytes')).toBe('gauge');
    expect(value(p, 'pd3_memserver_brand_new_stat')).toBe(42); // unknown stats are not dropped
    expect(p.type.has('pd3_memserver_refused_connections_total')).toBe(false); // absent stats give no family
    const buckets = p.samples.filter((s) => s.name === `${MEMSERVER_BATCH_HISTOGRAM}_bucket`);
    expect(buckets.map((s) => s.labels.le)).toEqual([...Array.from({ length: 13 }, (_, i) => String(2 ** i)), '+Inf']);
    expect(buckets.map((s) => s.value)).toEqual([5, 5, 5, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8]);
    expect(value(p, `${MEMSERVER_BATCH_HISTOGRAM}_count`)).toBe(8);
  });

  it('maps agent stats and per-server state', () => {
    const p = parseExposition(
      formatExposition(
        agentFamilies(
          {
            batches: 3,
            records: 30,
            frames_sent: 4,
            bytes_sent: 900,
            bytes_received: 800,
            responses: 30,
            errors: 1,
            unavailable: 2,
            fenced: 0,
            reconnects: 1,
            servers_up: 1,
            request_ring_bytes: 64,
            response_backlog: 0,
            inflight_records: 5,
            host_view_keys: 10,
            host_view_inserts: 12,
            host_view_erases: 2,
            lz_invalidations: 1,
          },
          [
            { endpoint: '127.0.0.1:7400', connected: true, serverId: 0, capacity: 100, freeBytes: 60, placeable: true, lastError: '' },
            { endpoint: 'mem-2:7400', connected: false, serverId: -1, capacity: 0, freeBytes: 0, placeable: false, lastError: 'refused' },
          ],
        ),
      ),
    );
    expect(value(p, 'pd3_agent_records_total')).toBe(30);
    expect(value(p, 'pd3_agent_sent_bytes_total')).toBe(900);
    expect(value(p, 'pd3_agent_inflight_records')).toBe(5);
    expect(p.type.get('pd3_agent_servers_up')).toBe('gauge');
    expect(value(p, 'pd3_agent_host_view_inserts_total')).toBe(12);
    expect(value(p, 'pd3_agent_server_connected', { server: '127.0.0.1:7400' })).toBe(1);
    expect(value(p, 'pd3_agent_server_connected', { server: 'mem-2:7400' })).toBe(0);
    expect(value(p, 'pd3_agent_server_free_bytes', { server: '127.0.0.1:7400' })).toBe(60);
    expect(value(p, 'pd3_agent_server_placeable', { server: 'mem-2:7400' })).toBe(0);
  });
});

describe('metrics endpoint', () => {
  const open: MetricsServer[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
  });
  const quiet = new Logger('test', 'error', () => {});

  async function get(
    ep: { host: string; port: number },
    path: string,
    method = 'GET',
  ): Promise<{ status: number; type: string | null; body: string }> {
    const res = await fetch(`http://${ep.host}:${ep.port}${path}`, { method, signal: AbortSignal.timeout(5000) });
    return { status: res.status, type: res.headers.get('content-type'), body: await res.text() };
  }

  it('serves /metrics and /healthz, 404 elsewhere, 405 for other methods, 500 when collection fails', async () => {
    let fail = false;
    const s = await MetricsServer.listen(
      { host: '127.0.0.1', port: 0 },
      () => {
        if (fail) throw new Error('native handle closed');
        return formatExposition([{ type: 'gauge', name: 'x_up', help: 'Up.', samples: [{ value: 1 }] }]);
      },
      quiet,
    );
    open.push(s);
    expect(s.address.port).toBeGreaterThan(0);
    const m = await get(s.address, '/metrics');
    expect(m.status).toBe(200);
    expect(m.type).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(value(parseExposition(m.body), 'x_up')).toBe(1);
    expect(await get(s.address, '/healthz')).toMatchObject({ status: 200, body: 'ok\n' });
    expect((await get(s.address, '/metrics?x=1')).status).toBe(200);
    expect((await get(s.address, '/')).status).toBe(404);
    expect((await get(s.address, '/metrics', 'POST')).status).toBe(405);
    fail = true;
    expect(await get(s.address, '/metrics')).toMatchObject({
      status: 500,
      body: 'collecting metrics failed: native handle closed\n',
    });
  });

  it('refuses an address in use with a message naming it', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as AddressInfo).port;
    try {
      await expect(MetricsServer.listen({ host: '127.0.0.1', port }, () => '', quiet)).rejects.toThrow(
        new RegExp(`metrics endpoint 127\\.0\\.0\\.1:${port}: cannot listen: .*EADDRINUSE`),
      );
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });
});

describe('log lines', () => {
  it('writes one JSON object per line with ts, level, component, event, msg and fields', () => {
    const lines: string[] = [];
    const log = new Logger('memserver', 'info', (l) => lines.push(l));
    log.debug('hidden', 'below the level');
    log.info('ready', 'serving', { port: 7400, big: 2n ** 70n, ts: 'not the time' });
    log.error('oops', 'failed', { cause: new Error('why') });
    expect(lines).toHaveLength(2);
    expect(lines.every((l) => l.endsWith('\n') && !l.slice(0, -1).includes('\n'))).toBe(true);
    const first = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(Object.keys(first).slice(0, 5)).toEqual(['ts', 'level', 'component', 'event', 'msg']);
    expect(first).toMatchObject({
      level: 'info',
      component: 'memserver',
      event: 'ready',
      msg: 'serving',
      port: 7400,
      big: '1180591620717411303424',
      field_ts: 'not the time',
    });
    expect(new Date(first.ts as string).toISOString()).toBe(first.ts);
    expect(JSON.parse(lines[1]!)).toMatchObject({ level: 'error', event: 'oops', cause: 'why' });
    expect(new Logger('x', 'warn').enabled('info')).toBe(false);
  });
});
