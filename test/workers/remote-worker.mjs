// remote-worker.mjs — worker: attaches to the creator's segment, allocates its own remote region
// through the real agent and memory server, and runs random reads and writes against a model.
import { parentPort, workerData } from 'node:worker_threads';
import { Pd3Host } from '../../dist/host/index.js';
import { Rand, randomModelRun } from './model-run.mjs';

const { name, bytes, ops, seed, batch } = workerData;
const host = Pd3Host.attach(name);
try {
  const { region, capacity } = await host.allocate(bytes);
  const model = Buffer.alloc(capacity);
  const result = await randomModelRun(host, [{ region, model }], ops, new Rand(seed), batch);
  parentPort?.postMessage({ region, capacity, result, model, leftover: host.inflight });
} finally {
  host.close();
}
