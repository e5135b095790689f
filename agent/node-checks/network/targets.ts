/**
 * What the network check probes: a target is an address and a TCP port, of one kind. The
 * kinds are the metric label values, so they stay few; the addresses are only in messages and
 * logs.
 */
import { isIPv4, isIPv6 } from 'node:net';

/** Where a target comes from: the default route's gateway, KUBERNETES_SERVICE_HOST/PORT, or `targets`. */
export const TARGET_KINDS = ['gateway', 'api-server', 'configured'] as const;
/** One of TARGET_KINDS. */
export type TargetKind = (typeof TARGET_KINDS)[number];

/** One address and port to connect to. */
export interface Endpoint {
  /** An IP address, IPv6 without brackets. */
  readonly host: string;
  readonly port: number;
}

/** A probed endpoint and where it came from. */
export interface Target extends Endpoint {
  readonly kind: TargetKind;
}

/** `10.0.0.1:443`, `[fd00::1]:443`: how targets are written in config, messages and logs. */
export function formatEndpoint(endpoint: Endpoint): string {
  return isIPv6(endpoint.host) ? `[${endpoint.host}]:${endpoint.port}` : `${endpoint.host}:${endpoint.port}`;
}

/**
 * Why `host` is no address to probe, or undefined. Names are refused: the probe tests the
 * network, and a name would make it test DNS too (and hang on a resolver's timeouts).
 * Unspecified, multicast and broadcast addresses reach no one host (Linux connects
 * 0.0.0.0 to itself).
 */
export function addressProblem(host: string): string | undefined {
  if (isIPv4(host)) {
    const first = Number(host.split('.')[0]);
    if (host === '0.0.0.0' || host === '255.255.255.255' || (first >= 224 && first <= 239))
      return `${host} is not a unicast address`;
    return undefined;
  }
  if (isIPv6(host)) {
    const bare = host.toLowerCase();
    if (/^(0*:)*:?0*$/.test(bare) || bare.startsWith('ff')) return `${host} is not a unicast address`;
    return undefined;
  }
  return `"${host.slice(0, 64)}" is not an IP address (names are not resolved)`;
}

/** Why `text` is no TCP port (1-65535), or undefined. */
export function portProblem(text: string): string | undefined {
  if (!/^\d{1,5}$/.test(text)) return `"${text.slice(0, 16)}" is not a port number`;
  const port = Number(text);
  return port >= 1 && port <= 65535 ? undefined : `port ${port} is outside 1-65535`;
}

/** `host:port` (IPv4) or `[host]:port` (IPv6) as an endpoint, or why it is not one. */
export function parseEndpoint(text: string): Endpoint | { error: string } {
  const match = /^\[([^\]]*)\]:([^:]*)$/.exec(text) ?? /^([^:[\]]*):([^:]*)$/.exec(text);
  if (!match) return { error: 'must be host:port (IPv4) or [host]:port (IPv6)' };
  const [, host = '', port = ''] = match;
  const problem = addressProblem(host) ?? portProblem(port);
  return problem === undefined ? { host, port: Number(port) } : { error: problem };
}
