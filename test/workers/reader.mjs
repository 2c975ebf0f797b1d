// reader.mjs — worker: attach to the creator's segment, read and write through its own handle.
import { parentPort, workerData } from 'node:worker_threads';
import { Pd3Host } from '../../dist/host/index.js';

const { name, region, base, count } = workerData;
const host = Pd3Host.attach(name);
let mismatches = 0;
for (let i = 0; i < count; ++i) {
  const data = Buffer.alloc(32, (base + i) & 0xff);
  data.writeUInt32LE(base + i, 0);
  await host.write(region, (base + i) * 32, data);
  const back = await host.read(region, (base + i) * 32, 32);
  if (!back.equals(data)) mismatches++;
}
const leftover = host.inflight;
host.close();
parentPort.postMessage({ mismatches, leftover });
