/**
 * Test support for the network check: a scripted connector (answers set per endpoint, each
 * attempt recorded, optionally held open until released) and recorded /proc tables.
 */
import type { ConnectResult, Connector } from './connector.js';
import type { ReadHead } from './read-head.js';
import { formatEndpoint, type Endpoint } from './targets.js';

/** A connector whose answers the test sets, per endpoint (`10.0.0.1:53`). */
export interface FakeConnector {
  readonly connect: Connector;
  /** Every attempt so far, as `host:port`. */
  readonly attempts: string[];
  /** Attempts started and not yet settled. */
  readonly inFlight: number;
  /** What attempts to `endpoint` answer from now on (default: connected). */
  answer(endpoint: string, result: ConnectResult | ConnectResult['outcome']): void;
  /** Holds every attempt from now on until release() (a slow network). */
  hold(): void;
  /** Settles the held attempts with their answers and stops holding. */
  release(): void;
}

/** The one-line error a real attempt gives for each outcome. */
const ERRORS: Record<ConnectResult['outcome'], string | null> = {
  connected: null,
  refused: 'ECONNREFUSED',
  timeout: 'timeout after 1000 ms',
  unreachable: 'EHOSTUNREACH',
  error: 'EACCES',
  aborted: 'aborted',
};

export function fakeConnector(): FakeConnector {
  const answers = new Map<string, ConnectResult>();
  const attempts: string[] = [];
  let held: (() => void)[] | null = null;
  let inFlight = 0;
  const connect: Connector = (endpoint: Endpoint, _timeoutMs, signal) => {
    const key = formatEndpoint(endpoint);
    attempts.push(key);
    inFlight++;
    return new Promise<ConnectResult>((resolve) => {
      const settle = (): void => {
        inFlight--;
        resolve(
          signal.aborted
            ? { outcome: 'aborted', error: 'aborted' }
            : (answers.get(key) ?? { outcome: 'connected', error: null }),
        );
      };
      if (held) held.push(settle);
      else queueMicrotask(settle);
    });
  };
  return {
    connect,
    attempts,
    get inFlight() {
      return inFlight;
    },
    answer(endpoint, result) {
      answers.set(endpoint, typeof result === 'string' ? { outcome: result, error: ERRORS[result] } : result);
    },
    hold() {
      held ??= [];
    },
    release() {
      const waiting = held ?? [];
      held = null;
      for (const settle of waiting) settle();
    },
  };
}

/** A reader of in-memory files: path → text; a missing path rejects with ENOENT, as a real read does. */
export function fakeFiles(
  files: Record<string, string>,
): ReadHead & { reads: string[]; files: Record<string, string> } {
  const reads: string[] = [];
  const read = (async (path: string, maxBytes: number) => {
    reads.push(path);
    const text = files[path];
    if (text === undefined)
      throw Object.assign(new Error(`ENOENT: no such file, open '${path}'`), { code: 'ENOENT' });
    return { text: text.slice(0, maxBytes), truncated: text.length > maxBytes };
  }) as ReadHead & { reads: string[]; files: Record<string, string> };
  read.reads = reads;
  read.files = files;
  return read;
}

/** The header of /proc/net/route, as the kernel prints it (tabs, trailing blanks). */
export const ROUTE_HEADER =
  'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT                                                       ';

/** One /proc/net/route line: addresses as dotted IPv4, written little-endian as the kernel does. */
export function routeLine(route: {
  iface: string;
  destination: string;
  gateway: string;
  flags: number;
  metric?: number;
  mask: string;
}): string {
  const word = (ip: string): string =>
    ip
      .split('.')
      .reverse()
      .map((part) => Number(part).toString(16).toUpperCase().padStart(2, '0'))
      .join('');
  return [
    route.iface,
    word(route.destination),
    word(route.gateway),
    route.flags.toString(16).toUpperCase().padStart(4, '0'),
    '0',
    '0',
    String(route.metric ?? 0),
    word(route.mask),
    '0',
    '0',
    '0',
  ].join('\t');
}

/** The header of /proc/net/arp. */
export const ARP_HEADER = 'IP address       HW type     Flags       HW address            Mask     Device';

/** One /proc/net/arp line. */
export function arpLine(ip: string, flags: number, mac: string, device: string): string {
  return `${ip.padEnd(17)}0x1         0x${flags.toString(16).padEnd(10)}${mac.padEnd(22)}*        ${device}`;
}
