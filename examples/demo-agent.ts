// demo-agent.ts — worker for `npm start`: the agent's side of the segment. It answers remote-memory
// requests from a local buffer (standing in for the memory server, which is not built yet) and
// produces Loading Zone items for the keys the main thread will ask for.
import { parentPort, workerData } from 'node:worker_threads';
import { AgentSession } from '../dpu/index.js';
import { constants as C } from '../host/index.js';

const { name, keys } = workerData as { name: string; keys: number };
const agent = AgentSession.attach(name);
const memory = Buffer.alloc(1 << 20);
let stop = false;
parentPort!.on('message', (m: string) => {
  if (m === 'prefetch') {
    const value = Buffer.alloc(64);
    for (let k = 0; k < keys; ++k) {
      value.writeUInt32LE(k, 0);
      agent.produce(0, Buffer.from(`user:${k}`), value);
    }
    parentPort!.postMessage('prefetched');
  } else if (m === 'stop') {
    stop = true;
  }
});

function serve(): void {
  agent.beat();
  for (const r of agent.takeRequests()) {
    if (r.op === C.OP_CONTROL && r.region === C.CTL_ALLOCATE) {
      const reply = Buffer.alloc(8);
      reply.writeUInt16LE(1, 0);
      reply.writeUInt32LE(memory.length, 4);
      agent.respond(r.opId, 0, reply);
    } else if (r.offset + r.size > memory.length) {
      agent.respond(r.opId, C.status.PD3_E_RANGE!);
    } else if (r.op === C.OP_READ) {
      agent.respond(r.opId, 0, memory.subarray(r.offset, r.offset + r.size));
    } else if (r.op === C.OP_WRITE) {
      r.payload.copy(memory, r.offset);
      agent.respond(r.opId, 0, r.size);
    } else {
      agent.respond(r.opId, C.status.PD3_E_BAD_OP!);
    }
  }
  agent.clean();
  if (stop) {
    agent.close();
    process.exit(0);
  }
  setImmediate(serve);
}
serve();
