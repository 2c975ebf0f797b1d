// lz-consumer.mjs — worker: attach to a segment and take keys from the Loading Zone; report them.
import { parentPort, workerData } from 'node:worker_threads';
import { Pd3Host } from '../../dist/host/index.js';

const { name, impl, keys, order } = workerData;
const host = Pd3Host.attach(name, { checkAndReturn: impl });
const dest = Buffer.alloc(64);
const got = [];
const bad = [];
for (let round = 0; round < 2; ++round) {
  for (let i = 0; i < keys; ++i) {
    const k = (i * order) % keys; // each worker walks the keys in a different order
    const key = Buffer.from(`k${k}`);
    const n = host.checkAndReturn(key, dest);
    if (n > 0) {
      got.push(k);
      if (n !== 16 || dest.readUInt32LE(0) !== k || dest.readUInt32LE(12) !== (k ^ 0xabcdef)) bad.push(k);
    }
  }
}
host.close();
parentPort.postMessage({ got, bad });
