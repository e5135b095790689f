/**
 * Waiting on work that cannot itself be cancelled (a blocking read, a collector that ignores
 * its signal) without letting it hold up a stop or a deadline.
 */

/** What untilAborted resolves with when the signal won. */
export const ABORTED: unique symbol = Symbol('aborted');

/**
 * Settles as `promise` does, or with ABORTED as soon as `signal` aborts (the promise then
 * runs on unobserved; its later rejection is absorbed here, never unhandled).
 */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | typeof ABORTED> {
  return new Promise((resolve, reject) => {
    const onAbort = (): void => resolve(ABORTED);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error as Error);
      },
    );
  });
}

/** The errno code of a Node system error (`ENOENT`, `EPIPE`, …), or undefined. */
export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** `promise`, or a rejection with the signal's reason as soon as `signal` aborts. */
export async function rejectOnAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  const outcome = await untilAborted(promise, signal);
  if (outcome === ABORTED)
    throw signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason));
  return outcome;
}
