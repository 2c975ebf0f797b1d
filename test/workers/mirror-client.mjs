// mirror-client.mjs — the client of test/integration-mirror-port.test.ts, run in the mirror port's
// network namespace (ip netns exec NAME node mirror-client.mjs HOST PORT KEY...): sends a RESP GET
// for each key, one at a time, and prints the values (null for a nil reply) as one JSON array.
import { connect } from 'node:net';

const [host, port, ...keys] = process.argv.slice(2);
const socket = connect({ host, port: Number(port) });
socket.setNoDelay(true);
let buffer = Buffer.alloc(0);
let waiting = null;

socket.on('data', (chunk) => {
  buffer = Buffer.concat([buffer, chunk]);
  waiting?.();
});
socket.on('error', (e) => {
  console.error(`mirror-client: ${e.message}`);
  process.exit(1);
});

// One bulk-string reply ($N\r\n...\r\n or $-1\r\n), once it has fully arrived.
function reply() {
  const end = buffer.indexOf('\r\n');
  if (end < 0) return undefined;
  const head = buffer.toString('latin1', 0, end);
  if (!head.startsWith('$')) throw new Error(`unexpected reply ${head}`);
  const n = Number(head.slice(1));
  if (n < 0) {
    buffer = buffer.subarray(end + 2);
    return null;
  }
  if (buffer.length < end + 2 + n + 2) return undefined;
  const value = buffer.toString('utf8', end + 2, end + 2 + n);
  buffer = buffer.subarray(end + 4 + n);
  return value;
}

await new Promise((resolve) => socket.once('connect', resolve));
const values = [];
for (const key of keys) {
  socket.write(`*2\r\n$3\r\nGET\r\n$${Buffer.byteLength(key)}\r\n${key}\r\n`);
  let got = reply();
  while (got === undefined) {
    await new Promise((resolve) => (waiting = resolve));
    got = reply();
  }
  values.push(got);
}
socket.end();
console.log(JSON.stringify(values));
