// scrape.ts — reads metrics of the benchmarks' daemons from their Prometheus endpoints (pool,
// tier-io, prefetch, and the agent's DMA operations in e2e).
import { request } from 'node:http';

/** The text of http://ADDRESS/metrics (3 s at most). */
export function metricsText(address: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(`http://${address}/metrics`, { timeout: 3000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`GET ${address}/metrics: ${res.statusCode}`))));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${address}/metrics: no answer within 3 s`)));
    req.on('error', reject);
    req.end();
  });
}

/** The value of the sample `name` (with its labels, e.g. `x_total{op="read"}`) in a scrape; throws
 *  if it is absent. */
export function sample(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  if (line === undefined) throw new Error(`metric ${name} not in the scrape`);
  return Number(line.slice(name.length + 1));
}

/** The sum of sample `name` over the daemons at `addresses`. */
export async function scrape(addresses: readonly string[], name: string): Promise<number> {
  const texts = await Promise.all(addresses.map(metricsText));
  return texts.reduce((sum, t) => sum + sample(t, name), 0);
}
