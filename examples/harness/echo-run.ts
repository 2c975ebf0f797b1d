// echo-run.ts — runs a benchmark's child program, echoing what it prints, and takes the one JSON
// object it prints last (the convention of every benchmark program, native or not).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export type JsonValue = number | string | boolean | null;
export type JsonObject = Record<string, JsonValue>;

/**
 * Runs `cmd args` with stdout piped and stderr inherited. Echoes its stdout lines as they come,
 * except lines `hide` keeps back and its last line, which must be one JSON object: resolves with it
 * parsed. A JSON-looking line that is not the last is echoed once the next line shows it was not.
 * Rejects if the program cannot start, exits other than 0, or ends without a JSON object.
 */
export function runEchoing(cmd: string, args: readonly string[], hide: (line: string) => boolean = () => false): Promise<JsonObject> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let held: string | undefined; // a JSON-looking line, printed only if another line follows it
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (held !== undefined) console.log(held);
      held = undefined;
      if (line.startsWith('{')) held = line;
      else if (!hide(line)) console.log(line);
    });
    child.on('error', (e) => reject(new Error(`${cmd}: ${e.message}`)));
    // 'close', not 'exit': every line has been read by then.
    child.on('close', (code, signal) => {
      if (code !== 0) {
        if (held !== undefined) console.log(held);
        reject(new Error(`${cmd} failed (exit ${code ?? signal})`));
        return;
      }
      try {
        resolve(JSON.parse(held ?? '') as JsonObject);
      } catch {
        reject(new Error(`${cmd}: the last line is not a JSON object`));
      }
    });
  });
}
