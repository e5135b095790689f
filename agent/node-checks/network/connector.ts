/**
 * One TCP connection attempt, the probe's only traffic: no raw socket, no ICMP, no ping
 * binary (the image is distroless, and none needs a capability). A SYN answered by a SYN-ACK
 * (connected) or an RST (refused) proves the host is there and the path to it works; the
 * connection is closed at once, no byte sent. No answer within the timeout, or the kernel
 * saying the host or network is unreachable or down, is a miss.
 */
import { connect as netConnect, type NetConnectOpts, type Socket } from 'node:net';
import type { Clock } from '../../../platform/index.js';
import type { Endpoint } from './targets.js';

/** How one attempt ended; `aborted` (the check was stopped) is neither an answer nor a miss. */
export const CONNECT_OUTCOMES = [
  'connected',
  'refused',
  'timeout',
  'unreachable',
  'error',
  'aborted',
] as const;
/** One of CONNECT_OUTCOMES. */
export type ConnectOutcome = (typeof CONNECT_OUTCOMES)[number];

/** An attempt's outcome and, when it missed, why in one line (`ENETUNREACH`, `timeout after 2000 ms`). */
export interface ConnectResult {
  readonly outcome: ConnectOutcome;
  readonly error: string | null;
}

/** Connects to `endpoint` once, giving up after `timeoutMs` or when `signal` aborts. Never rejects. */
export type Connector = (
  endpoint: Endpoint,
  timeoutMs: number,
  signal: AbortSignal,
) => Promise<ConnectResult>;

/** Errors that say the peer answered: an RST to the SYN (or right after it). */
const ANSWERED = new Set(['ECONNREFUSED', 'ECONNRESET']);
/** Errors that say the path is broken: no route, no neighbour, an interface down. */
const UNREACHABLE = new Set(['EHOSTUNREACH', 'ENETUNREACH', 'ENETDOWN', 'EHOSTDOWN', 'ETIMEDOUT']);

/**
 * The real connector. `clock` times the attempt out; `open` makes the socket (tests pass one
 * that never connects).
 */
export function createTcpConnector(
  clock: Clock,
  open: (options: NetConnectOpts) => Socket = netConnect,
): Connector {
  return (endpoint, timeoutMs, signal) =>
    new Promise<ConnectResult>((resolve) => {
      if (signal.aborted) {
        resolve({ outcome: 'aborted', error: 'aborted' });
        return;
      }
      let socket: Socket;
      try {
        socket = open({ host: endpoint.host, port: endpoint.port, noDelay: true });
      } catch (error) {
        resolve({ outcome: 'error', error: codeOf(error) });
        return;
      }
      const settle = (result: ConnectResult): void => {
        cancelTimer();
        signal.removeEventListener('abort', onAbort);
        socket.removeAllListeners('connect');
        // The socket's later errors (none expected once destroyed) must not go unhandled.
        socket.removeAllListeners('error');
        socket.on('error', () => undefined);
        socket.destroy();
        resolve(result);
      };
      const onAbort = (): void => settle({ outcome: 'aborted', error: 'aborted' });
      const cancelTimer = clock.schedule(timeoutMs, () =>
        settle({ outcome: 'timeout', error: `timeout after ${timeoutMs} ms` }),
      );
      signal.addEventListener('abort', onAbort, { once: true });
      socket.once('connect', () => settle({ outcome: 'connected', error: null }));
      socket.once('error', (error) => {
        const code = codeOf(error);
        settle({
          outcome: ANSWERED.has(code) ? 'refused' : UNREACHABLE.has(code) ? 'unreachable' : 'error',
          error: code,
        });
      });
    });
}

/** An error's code (`ECONNREFUSED`), or its first line when it has none, bounded. */
function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[A-Z0-9_]{1,32}$/.test(code)) return code;
  return String((error as Error | null)?.message ?? error)
    .split('\n')[0]!
    .slice(0, 120);
}
