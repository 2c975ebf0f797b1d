// credential-command.ts — `pd3-memserver credential --tenant NAME`: prints the credential that
// admits a client to one tenant's regions, derived from the cluster token the memory servers hold
// (pd3/transport.h, pd3_hello). Whoever holds the cluster token issues credentials; a client gets
// only its tenant's. docs/pool.md "Tenants and credentials".
import { createHmac } from 'node:crypto';
import { parseArgs } from 'node:util';
import { resolveToken } from '../cli/token.js';
import { UsageError } from '../cli/usage-error.js';
import { checkTenantName } from '../common/tenant-record.js';

/** The credential of `tenant` under `clusterToken`: lowercase hex of HMAC-SHA-256 over `context`
 *  (PD3_TENANT_CREDENTIAL_CONTEXT) followed by the tenant name. */
export function tenantCredential(clusterToken: string, tenant: string, context: string): string {
  return createHmac('sha256', clusterToken).update(context + checkTenantName(tenant)).digest('hex');
}

/** --help of the subcommand. */
export const CREDENTIAL_HELP = `Usage: pd3-memserver credential --tenant NAME [--token-file FILE | --token STRING]

Prints the credential of tenant NAME: what a client of that tenant presents as its token
(pd3-agent --tenant NAME --token-file F, or the host library's directTenant + directToken).
The cluster token is read from --token-file, --token or PD3_TOKEN, as pd3-memserver reads it.

  --tenant NAME        1 to 64 characters of A-Z a-z 0-9 . _ -
  --token-file FILE    the cluster token (a trailing line break is ignored)
  --token STRING       the cluster token (visible in ps: prefer --token-file or PD3_TOKEN)
  --help               this text
`;

/** Runs the subcommand on its arguments (after "credential"); returns the text to print. Throws
 *  UsageError. `context` is PD3_TENANT_CREDENTIAL_CONTEXT. */
export function credentialCommand(argv: readonly string[], env: NodeJS.ProcessEnv, context: string): string {
  let values: { tenant?: string; token?: string; 'token-file'?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        tenant: { type: 'string' },
        token: { type: 'string' },
        'token-file': { type: 'string' },
        help: { type: 'boolean' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  if (values.help) return CREDENTIAL_HELP;
  if (values.tenant === undefined) throw new UsageError('credential needs --tenant NAME');
  let tenant: string;
  try {
    tenant = checkTenantName(values.tenant);
  } catch (e) {
    throw new UsageError(`--tenant: ${(e as Error).message}`);
  }
  const token = resolveToken({ token: values.token, tokenFile: values['token-file'] }, {}, 'config', env.PD3_TOKEN);
  return `${tenantCredential(token, tenant, context)}\n`;
}
