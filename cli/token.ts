// token.ts — the auth token from --token, --token-file, the config file or PD3_TOKEN, in that order
// of precedence; a deployable refuses to start without one.
import { readFileSync } from 'node:fs';
import { UsageError } from './usage-error.js';

/** Largest token the transport carries (PD3_TOKEN_MAX in pd3/transport.h). */
export const TOKEN_MAX_BYTES = 256;

/** Where a token may be given, per layer. */
export interface TokenSetting {
  token?: string;
  tokenFile?: string;
}

function checked(token: string, where: string): string {
  if (token.length === 0) throw new UsageError(`${where}: the token is empty`);
  const bytes = Buffer.byteLength(token);
  if (bytes > TOKEN_MAX_BYTES)
    throw new UsageError(`${where}: the token is ${bytes} bytes, at most ${TOKEN_MAX_BYTES} allowed`);
  if (token.includes('\0')) throw new UsageError(`${where}: the token contains a NUL character`);
  return token;
}

/** Reads a token file; trailing line breaks are not part of the token. */
function readTokenFile(path: string, where: string): string {
  let content: string;
  try {
    content = readFileSync(path, 'utf8');
  } catch (e) {
    throw new UsageError(`${where} ${path}: cannot read it: ${e instanceof Error ? e.message : String(e)}`);
  }
  return checked(content.replace(/[\r\n]+$/, ''), `${where} ${path}`);
}

/** The token: flags first, then the config file, then the environment. Within one layer giving
 *  both a token and a token file is refused as ambiguous. */
export function resolveToken(
  flags: TokenSetting,
  file: TokenSetting,
  fileLabel: string,
  env: string | undefined,
): string {
  if (flags.token !== undefined && flags.tokenFile !== undefined) {
    throw new UsageError('give either --token or --token-file, not both');
  }
  if (flags.token !== undefined) return checked(flags.token, '--token');
  if (flags.tokenFile !== undefined) return readTokenFile(flags.tokenFile, '--token-file');
  if (file.token !== undefined && file.tokenFile !== undefined) {
    throw new UsageError(`${fileLabel}: give either "token" or "tokenFile", not both`);
  }
  if (file.token !== undefined) return checked(file.token, `${fileLabel}, key "token"`);
  if (file.tokenFile !== undefined) return readTokenFile(file.tokenFile, `${fileLabel}, key "tokenFile":`);
  if (env !== undefined) return checked(env, 'PD3_TOKEN');
  throw new UsageError(
    'no auth token: give --token-file FILE (or --token STRING), ' +
      'set "token" or "tokenFile" in the config file, or set PD3_TOKEN',
  );
}
