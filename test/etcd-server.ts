// etcd-server.ts — the pool tests' etcd: the starter shared with the pool benchmark
// (examples/harness/etcd-server.ts), and finding the binary, which skips a test where it is missing.
import { freePort } from '../dist/examples/harness/processes.js';
import { optionalProgram } from './optional-program.js';

export { EtcdServer } from '../dist/examples/harness/etcd-server.js';
export { freePort };

/** The etcd binary, or null (the caller skips; the line names Debian's etcd-server). */
export function findEtcd(needs: string): string | null {
  return optionalProgram({ name: 'etcd', debianPackage: 'etcd-server', needs });
}
