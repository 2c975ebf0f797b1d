// endpoint.ts — "HOST:PORT" addresses of listeners and memory servers, parsed and validated.

/** A TCP address. */
export interface Endpoint {
  host: string;
  port: number;
}

/** What an endpoint may be. */
export interface EndpointRules {
  /** Port 0 ("any free port") is allowed: listeners only. */
  anyPort: boolean;
  /** The host must be a dotted IPv4 address (what the native listener binds); else a name is fine. */
  ipv4Only: boolean;
}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
// RFC 1123 host name: dot-separated labels of letters, digits and inner hyphens.
const HOST_NAME =
  /^(?=.{1,253}$)[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/;

/** True for a dotted IPv4 address with every part ≤ 255. */
export function isIPv4(host: string): boolean {
  const m = IPV4.exec(host);
  return m !== null && m.slice(1).every((part) => Number(part) <= 255);
}

/** Parses "HOST:PORT". Throws an Error saying what is wrong. */
export function parseEndpoint(text: string, rules: EndpointRules): Endpoint {
  const colon = text.lastIndexOf(':');
  if (colon <= 0 || colon === text.length - 1) throw new Error(`expected HOST:PORT, got "${text}"`);
  const host = text.slice(0, colon);
  const portText = text.slice(colon + 1);
  const lowest = rules.anyPort ? 0 : 1;
  if (!/^\d{1,5}$/.test(portText) || Number(portText) < lowest || Number(portText) > 65535) {
    throw new Error(`port must be a number from ${lowest} to 65535, got "${portText}" in "${text}"`);
  }
  const looksNumeric = IPV4.test(host); // "1.2.3.999" is a bad address, not a host name
  if (rules.ipv4Only || looksNumeric ? !isIPv4(host) : !HOST_NAME.test(host)) {
    const want = rules.ipv4Only ? 'an IPv4 address such as 127.0.0.1 or 0.0.0.0' : 'an IPv4 address or a host name';
    throw new Error(`host must be ${want}, got "${host}" in "${text}"`);
  }
  return { host, port: Number(portText) };
}

/** "host:port". */
export function formatEndpoint(ep: Endpoint): string {
  return `${ep.host}:${ep.port}`;
}
