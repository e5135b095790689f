/**
 * `followStatus(options)`: one call, any of the three transports, with the staleness
 * threshold that suits each (how often what it reads can move):
 *
 * | transport | moves | default staleAfterMs |
 * | --- | --- | --- |
 * | `watch` of `ai-infra` | every heartbeat (1 s) | 10 s |
 * | `watch` of a mirror | at most every 10 s | 30 s |
 * | `sse` | an event or heartbeat comment (15 s) | 45 s |
 * | `file` | the mirror (10 s) behind the kubelet's sync (about a minute, plus its cache TTL) | 180 s |
 */
import { STATUS_NAMESPACE } from '../contracts/index.js';
import { fileTransport, type FileTransportOptions } from './file-transport.js';
import { createFollower, type StatusFollower, type Transport } from './follower.js';
import { sseTransport, type SseTransportOptions } from './sse-transport.js';
import { realClock, type ConsumerClock } from './types.js';
import { watchTransport, type WatchTransportOptions } from './watch-transport.js';

/** What to follow, and through what. */
export type FollowOptions = (
  | ({ transport: 'file' } & FileTransportOptions)
  | ({ transport: 'sse' } & SseTransportOptions)
  | ({ transport: 'watch' } & WatchTransportOptions)
) & {
  /**
   * The node to follow; null for the whole cluster. Default `$NODE_NAME` (the downward API),
   * else the cluster. The `sse` transport always follows its agent's node.
   */
  node?: string | null;
  /** Override the transport's default staleness threshold, ms. */
  staleAfterMs?: number;
  clock?: ConsumerClock;
};

/** Starts following. Errors arrive through `onError`; only bad options throw. */
export function followStatus(options: FollowOptions): StatusFollower {
  const clock = options.clock ?? realClock;
  const env = ('env' in options ? options.env : undefined) ?? process.env;
  const node = options.node === undefined ? (env.NODE_NAME ?? null) : options.node;
  let transport: Transport;
  let staleAfterMs: number;
  switch (options.transport) {
    case 'file':
      transport = fileTransport(options, clock);
      staleAfterMs = 180_000;
      break;
    case 'sse':
      transport = sseTransport(options, clock);
      staleAfterMs = 45_000;
      break;
    case 'watch':
      transport = watchTransport(options, clock);
      staleAfterMs = (options.namespace ?? STATUS_NAMESPACE) === STATUS_NAMESPACE ? 10_000 : 30_000;
      break;
    default:
      throw new RangeError(
        `followStatus transport: expected file, sse or watch, got ${String((options as { transport?: unknown }).transport)}`,
      );
  }
  if (options.staleAfterMs !== undefined) {
    if (!(options.staleAfterMs > 0))
      throw new RangeError(`followStatus staleAfterMs: expected > 0, got ${options.staleAfterMs}`);
    staleAfterMs = options.staleAfterMs;
  }
  return createFollower(transport, { node, staleAfterMs, clock });
}
