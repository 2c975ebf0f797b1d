// etcd-server.ts — the pool tests' etcd: the starter shared with the pool benchmark
// (examples/harness/etcd-server.ts), and finding the binary, which skips a test where it is missing.
import { afterAll, beforeAll } from 'vitest';
import { Etcd3 } from 'etcd3';
import { EtcdServer } from '../dist/examples/harness/etcd-server.js';
import { freePort } from '../dist/examples/harness/processes.js';
import { optionalProgram } from './optional-program.js';

export { EtcdServer, freePort };

/** The etcd binary, or null (the caller skips; the line names Debian's etcd-server). */
export function findEtcd(needs: string): string | null {
  return optionalProgram({ name: 'etcd', debianPackage: 'etcd-server', needs });
}

/** One etcd (and a client of it) for a describe block: started before its tests, stopped after. */
export interface SharedEtcd {
  readonly etcd: EtcdServer;
  readonly kv: Etcd3;
  /** A key prefix no other test of the block uses, so that their records never meet. */
  freshPrefix(): string;
}

/** Registers the beforeAll/afterAll of a describe block's etcd; `tag` starts its prefixes. */
export function sharedEtcd(binary: string, tag: string, startTimeoutMs = 20_000): SharedEtcd {
  let etcd: EtcdServer | undefined;
  let kv: Etcd3 | undefined;
  let prefixes = 0;
  beforeAll(async () => {
    etcd = await EtcdServer.create(binary);
    await etcd.start();
    kv = new Etcd3({ hosts: etcd.url });
  }, startTimeoutMs);
  afterAll(async () => {
    kv?.close();
    await etcd?.close();
  });
  return {
    get etcd() {
      if (etcd === undefined) throw new Error('etcd is used before beforeAll started it');
      return etcd;
    },
    get kv() {
      if (kv === undefined) throw new Error('etcd is used before beforeAll started it');
      return kv;
    },
    freshPrefix: () => `/${tag}${process.pid}-${prefixes++}`,
  };
}
