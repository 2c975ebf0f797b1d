// examples/harness/echo-run.ts: how the bench scripts run a child program, echo its output and take
// the JSON object on its last line; and the ways that can fail.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runEchoing } from '../dist/examples/harness/echo-run.js';

// Runs a shell script through runEchoing; returns what it echoed, one entry per line.
async function echoed(script: string, hide?: (line: string) => boolean): Promise<{ result: unknown; lines: string[] }> {
  const log = vi.spyOn(console, 'log').mockImplementation(() => {});
  const result = await runEchoing('sh', ['-c', script], hide);
  return { result, lines: log.mock.calls.map((c) => String(c[0])) };
}

describe('runEchoing', () => {
  afterEach(() => vi.restoreAllMocks());

  it('echoes every line but the hidden ones and the last, and resolves with the last parsed', async () => {
    const { result, lines } = await echoed(
      `echo one; echo 'skip me'; echo '{"early":1}'; echo two; printf '{"a":1,"b":"x"}\\n'`,
      (line) => line.startsWith('skip'));
    expect(lines).toEqual(['one', '{"early":1}', 'two']);
    expect(result).toEqual({ a: 1, b: 'x' });
  });

  it('rejects a program that exits other than 0, after echoing what it printed', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    await expect(runEchoing('sh', ['-c', `echo before; echo '{"partial":1}'; exit 3`])).rejects.toThrow(/^sh failed \(exit 3\)$/);
    expect(log.mock.calls.map((c) => String(c[0]))).toEqual(['before', '{"partial":1}']);
  });

  it('rejects a program whose last line is not a JSON object', async () => {
    vi.spyOn(console, 'log').mockImplementation(() => {});
    await expect(runEchoing('sh', ['-c', 'echo done'])).rejects.toThrow(/the last line is not a JSON object/);
    await expect(runEchoing('sh', ['-c', `echo '{"cut":'`])).rejects.toThrow(/the last line is not a JSON object/);
    await expect(runEchoing('sh', ['-c', 'true'])).rejects.toThrow(/the last line is not a JSON object/);
  });

  it('rejects a program that cannot start', async () => {
    await expect(runEchoing('/nonexistent/pd3-no-such-program', [])).rejects.toThrow(/^\/nonexistent\/pd3-no-such-program: .*ENOENT/);
  });
});
