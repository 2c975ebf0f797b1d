// pages-client.ts — a typed @grpc/grpc-js client of the Pages service (one HTTP/2 connection).
import * as grpc from '@grpc/grpc-js';
import { pagesMethods, type PagesMethod, type WireMessage } from './pages-service.js';

/** Calls GetPage, GetPages, PutPage and Stats on one server. */
export class PagesClient {
  private readonly client: grpc.Client;
  private readonly methods = pagesMethods();

  /** `target` is "HOST:PORT". Clients of the same target share one connection unless `options` set
   *  'grpc.use_local_subchannel_pool'. */
  constructor(target: string, options: grpc.ChannelOptions = {}) {
    this.client = new grpc.Client(target, grpc.credentials.createInsecure(), options);
  }

  async getPage(id: number): Promise<Buffer> {
    return pageData(await this.call('GetPage', { id }));
  }

  async getPages(ids: readonly number[]): Promise<Buffer[]> {
    const answer = await this.call('GetPages', { ids: [...ids] });
    const pages = Array.isArray(answer.pages) ? (answer.pages as WireMessage[]) : [];
    return pages.map(pageData);
  }

  async putPage(id: number, data: Uint8Array): Promise<void> {
    await this.call('PutPage', { id, data });
  }

  /** The server's counters (ServerStats, field names as in pages.proto), as numbers. */
  async stats(): Promise<Record<string, number | string>> {
    const answer = await this.call('Stats', {});
    const out: Record<string, number | string> = {};
    for (const [name, value] of Object.entries(answer)) {
      if (typeof value === 'string') out[name] = /^\d+$/.test(value) ? Number(value) : value;
      else if (typeof value === 'number') out[name] = value;
    }
    return out;
  }

  /** One unary call with a message as protobufjs fromObject takes it; rejects with the
   *  grpc.ServiceError the server answered. */
  call(method: PagesMethod, request: WireMessage): Promise<WireMessage> {
    const d = this.methods[method];
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(d.path, d.requestSerialize, d.responseDeserialize, request, (e: grpc.ServiceError | null, value?: WireMessage) =>
        e ? reject(e) : resolve(value ?? {}),
      );
    });
  }

  /** The underlying grpc-js client, for calls with hand-made request bytes. */
  get raw(): grpc.Client {
    return this.client;
  }

  close(): void {
    this.client.close();
  }
}

function pageData(page: WireMessage): Buffer {
  const data = page.data;
  if (!(data instanceof Uint8Array)) throw new TypeError('the server answered a page without data');
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}
