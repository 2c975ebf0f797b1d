// metrics-server.ts — the HTTP endpoint of a deployable: GET /metrics (Prometheus text) and
// GET /healthz ("ok").
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { formatEndpoint, type Endpoint } from './endpoint.js';
import type { Logger } from './logger.js';
import { EXPOSITION_CONTENT_TYPE } from './metrics.js';

/** A listening metrics endpoint. */
export class MetricsServer {
  /** Where it listens (the real port when 0 was asked for). */
  readonly address: Endpoint;

  private constructor(
    private readonly server: Server,
    address: Endpoint,
  ) {
    this.address = address;
  }

  /** Listens on `at`; `expose` renders the exposition at each scrape. Rejects with a message
   *  naming the address if it cannot listen (in use, not a local address, unresolvable). */
  static listen(at: Endpoint, expose: () => string, logger: Logger): Promise<MetricsServer> {
    const server = createServer((req, res) => handle(req, res, expose, logger));
    server.keepAliveTimeout = 5000;
    return new Promise((resolve, reject) => {
      const onError = (e: Error): void => {
        server.close();
        reject(new Error(`metrics endpoint ${formatEndpoint(at)}: cannot listen: ${e.message}`));
      };
      server.once('error', onError);
      server.listen(at.port, at.host, () => {
        server.off('error', onError);
        server.on('error', (e) => logger.error('metrics.error', `metrics endpoint: ${e.message}`));
        const bound = server.address() as AddressInfo;
        resolve(new MetricsServer(server, { host: at.host, port: bound.port }));
      });
    });
  }

  /** Stops listening and drops open connections. */
  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

function handle(req: IncomingMessage, res: ServerResponse, expose: () => string, logger: Logger): void {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { 'Content-Type': 'text/plain; charset=utf-8', Allow: 'GET, HEAD' }).end('method not allowed\n');
    return;
  }
  if (path === '/healthz') {
    res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' }).end('ok\n');
    return;
  }
  if (path !== '/metrics') {
    res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('not found: try /metrics or /healthz\n');
    return;
  }
  let body: string;
  try {
    body = expose();
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    logger.error('metrics.failed', `collecting metrics failed: ${msg}`);
    res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end(`collecting metrics failed: ${msg}\n`);
    return;
  }
  res.writeHead(200, { 'Content-Type': EXPOSITION_CONTENT_TYPE }).end(body);
}
