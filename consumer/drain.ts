/**
 * Draining a serving process (a vLLM front-end, any http.Server) when its node has a failed
 * device: stop accepting connections, let requests in flight finish, close keep-alive
 * connections as they go idle, and cut what is left after a grace period. What happens to
 * the process afterwards (exit, so the Deployment reschedules it) is the caller's choice,
 * made in `onDrain` or after `drained`.
 */
import type { Server } from 'node:http';
import type { StatusFollower } from './follower.js';
import { realClock, type ConsumerClock, type FailedDevice } from './types.js';

/** How to drain. */
export interface DrainOptions {
  /** Cut the connections still open this long after draining began, ms (default 30 000). */
  graceMs?: number;
  /** Called once as draining begins, with the failed devices. */
  onDrain?: (failed: FailedDevice[]) => void;
  clock?: ConsumerClock;
}

/** A drain armed on a follower. */
export interface DrainHandle {
  readonly draining: boolean;
  /** Resolves when the server has closed (after a drain). */
  readonly drained: Promise<void>;
  /** Disarms (does not undo a drain that began). */
  cancel(): void;
}

/** How often idle keep-alive connections are closed while draining, ms. */
const IDLE_SWEEP_MS = 100;

/**
 * Drains `server` once the node `follower` follows has a failed device, listed or only
 * counted in its summary (at once when it has one already). A follower of the whole cluster never drains: a failure elsewhere is not this
 * process's.
 */
export function drainOnFailure(
  server: Server,
  follower: StatusFollower,
  options: DrainOptions = {},
): DrainHandle {
  const clock = options.clock ?? realClock;
  const graceMs = options.graceMs ?? 30_000;
  let draining = false;
  let resolveDrained: () => void = () => undefined;
  const drained = new Promise<void>((resolve) => (resolveDrained = resolve));
  const cancels: (() => void)[] = [];

  const drain = (failed: FailedDevice[]): void => {
    if (draining) return;
    draining = true;
    disarm();
    try {
      options.onDrain?.(failed);
    } finally {
      let closed = false;
      server.close(() => {
        closed = true;
        resolveDrained();
      });
      const sweep = (): void => {
        if (closed) return;
        server.closeIdleConnections();
        cancels.push(clock.schedule(IDLE_SWEEP_MS, sweep));
      };
      sweep();
      cancels.push(clock.schedule(graceMs, () => server.closeAllConnections()));
      void drained.then(() => cancels.splice(0).forEach((cancel) => cancel()));
    }
  };

  const consider = (): void => {
    const view = follower.current();
    // The node's health counts every device, also those the byte budget did not list.
    if (view && view.node !== null && (view.failed.length > 0 || view.health === 'failed'))
      drain(view.failed);
  };
  const listeners = [follower.onChange(consider), follower.onDeviceFailed(consider)];
  const disarm = (): void => listeners.forEach((remove) => remove());
  consider();

  return {
    get draining() {
      return draining;
    },
    drained,
    cancel: disarm,
  };
}
