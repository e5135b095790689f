/**
 * One API request's cancellation: it ends when the caller's signal aborts (leadership lost,
 * shutdown) or after a timeout on the injected clock, whichever is first.
 */
import { AppError, type Clock } from '../../platform/index.js';

/** Runs `request` with a signal that aborts with `signal` or after `timeoutMs` on `clock`. */
export async function withRequestTimeout<T>(
  clock: Clock,
  timeoutMs: number,
  signal: AbortSignal,
  request: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const timeout = new AbortController();
  const cancel = clock.schedule(timeoutMs, () =>
    timeout.abort(new AppError('request_timeout', `request timed out after ${timeoutMs} ms`)),
  );
  try {
    return await request(AbortSignal.any([signal, timeout.signal]));
  } finally {
    cancel();
  }
}
