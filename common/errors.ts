// errors.ts — Pd3Error: a failure that carries the pd3_status code and its symbolic name, shared by
// every part so that one class means "PD3 said no" whichever addon said it.

// Status code → name (pd3/status.h). Every addon exports the same table; each part's loader hands
// it over once it is loaded (learnStatusNames), so this module needs no addon of its own.
const nameOf = new Map<number, string>();

/** Records the status names an addon exports (constants.status: name → negative code). */
export function learnStatusNames(status: Readonly<Record<string, number>>): void {
  for (const [name, code] of Object.entries(status)) nameOf.set(code, name);
}

/** An error from PD3 with the C status code (negative) and its name, e.g. "PD3_E_AGAIN". */
export class Pd3Error extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, message?: string) {
    const code = nameOf.get(status) ?? 'PD3_E_UNKNOWN';
    super(message ? `${code}: ${message}` : code);
    this.name = 'Pd3Error';
    this.status = status;
    this.code = code;
  }
}

/** Runs a native constructor, turning its status-carrying errors ("create: PD3_E_EXISTS: why")
 *  into Pd3Error ("PD3_E_EXISTS: create: why"); other errors pass through. */
export function callNative<T>(make: () => T): T {
  try {
    return make();
  } catch (e) {
    const err = e as Error & { status?: number };
    if (typeof err.status === 'number') throw new Pd3Error(err.status, err.message.replace(/^(\w+): PD3_E_\w+: /, '$1: '));
    throw e;
  }
}
