/**
 * The inference canary: on nodes that serve models (vLLM and the like), every interval a
 * fixed request to the local inference endpoint, its answer checked. Device metrics can be
 * perfect while serving is broken (a wedged runtime, a hung collective). Every snapshot
 * carries the count of consecutive failures; the engine raises `inference-canary-failed` on
 * the node's devices at its rules' `inference_canary.min_failures` (default 2), so the
 * threshold is one setting, in the rules, for replay and the controller alike.
 */
import { Counter, Gauge } from 'prom-client';
import {
  metricPrefix,
  readResponseText,
  type Clock,
  type Logger,
  type Registry,
  type Runnable,
} from '../../platform/index.js';

/** The largest answer of the inference server read (a completion of a few tokens is tiny). */
const MAX_CANARY_ANSWER_BYTES = 256 * 1024;

/** The canary's settings (agent config `canary`). */
export interface CanaryOptions {
  url: string;
  intervalSeconds: number;
  timeoutMs: number;
  body: string;
  /** Text the answer must contain; empty: any 2xx passes. */
  expect: string;
}

/** The canary's current verdict. */
export interface CanaryVerdict {
  /** True when the last request passed. */
  ok: boolean;
  consecutiveFailures: number;
  /** The last check's time (ISO), null before the first. */
  at: string | null;
  /** Why the last check failed; null when it passed. */
  error: string | null;
}

/** The canary: a Runnable with a verdict. */
export interface Canary extends Runnable {
  verdict(): CanaryVerdict;
  /** One check now (the loop calls it; tests too). */
  check(signal?: AbortSignal): Promise<void>;
}

/** Builds the canary. */
export function createCanary(
  options: CanaryOptions,
  deps: { clock: Clock; log: Logger; registry: Registry; fetch?: typeof fetch },
): Canary {
  const doFetch = deps.fetch ?? fetch;
  const prefix = metricPrefix('agent');
  const checks = new Counter({
    name: `${prefix}canary_checks_total`,
    help: 'Inference canary requests, by result',
    labelNames: ['result'],
    registers: [deps.registry],
  });
  const failing = new Gauge({
    name: `${prefix}canary_consecutive_failures`,
    help: 'Consecutive failed inference canary requests',
    registers: [deps.registry],
  });
  let verdict: CanaryVerdict = { ok: true, consecutiveFailures: 0, at: null, error: null };

  const check = async (signal?: AbortSignal): Promise<void> => {
    const timeout = AbortSignal.timeout(options.timeoutMs);
    const error = await probeOnce(doFetch, options, signal ? AbortSignal.any([signal, timeout]) : timeout);
    if (signal?.aborted) return;
    const at = new Date(deps.clock.now()).toISOString();
    const consecutiveFailures = error === null ? 0 : verdict.consecutiveFailures + 1;
    const ok = error === null;
    if (ok !== verdict.ok) {
      if (ok) deps.log.info('inference canary passes again');
      else deps.log.warn({ error, consecutiveFailures }, 'inference canary failing');
    }
    verdict = { ok, consecutiveFailures, at, error };
    checks.inc({ result: error === null ? 'ok' : 'failed' });
    failing.set(consecutiveFailures);
  };

  return {
    name: 'canary',
    verdict: () => verdict,
    check,
    async start(signal: AbortSignal): Promise<void> {
      while (!signal.aborted) {
        await check(signal);
        try {
          await deps.clock.sleep(options.intervalSeconds * 1000, signal);
        } catch {
          return;
        }
      }
    },
  };
}

/** One request; null when it passed, else why not (one line). */
async function probeOnce(
  doFetch: typeof fetch,
  options: CanaryOptions,
  signal: AbortSignal,
): Promise<string | null> {
  try {
    const res = await doFetch(options.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: options.body,
      signal,
    });
    const text = await readResponseText(res, MAX_CANARY_ANSWER_BYTES);
    if (!res.ok) return `HTTP ${res.status}`;
    if (options.expect !== '' && !text.includes(options.expect))
      return `answer lacks ${JSON.stringify(options.expect)}`;
    return null;
  } catch (error) {
    const name = (error as { name?: string } | null)?.name;
    if (name === 'TimeoutError' || name === 'AbortError') return `no answer within ${options.timeoutMs} ms`;
    return `request failed: ${String((error as Error | null)?.message ?? error).split('\n')[0]}`;
  }
}
