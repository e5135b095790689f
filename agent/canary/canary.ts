/**
 * The inference canary: on nodes that serve models (vLLM and the like), every interval one
 * fixed OpenAI-API request to the node's inference server, its answer checked. Device metrics
 * can be perfect while serving is broken (a wedged runtime, a hung collective, weights gone
 * bad). Every snapshot carries the count of consecutive failures; the engine raises
 * `inference-canary-failed` on the node's devices at its rules' `inference_canary.min_failures`
 * (default 2), so the threshold is one setting, in the rules, for replay and the controller
 * alike.
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import {
  AnswerTooLargeError,
  metricPrefix,
  readResponseText,
  type Clock,
  type Logger,
  type Registry,
  type Runnable,
} from '../../platform/index.js';
import {
  CANARY_RESULTS,
  answerCheckOf,
  failure,
  httpFailure,
  judgeAnswer,
  readAnswer,
  readModelList,
  type CanaryResult,
  type CheckOutcome,
} from './answer.js';
import type { CanaryConfig } from './config.js';
import { API_PATHS, MODELS_PATH, completionRequestBody, endpointUrl } from './request.js';

/** The largest answer of the inference server read (a completion of a few tokens is tiny). */
export const MAX_CANARY_ANSWER_BYTES = 256 * 1024;

/** The canary's settings: its config section (defaults filled in) with the url set. */
export type CanaryOptions = Omit<CanaryConfig, 'url'> & { readonly url: string };

/** The canary's current verdict. */
export interface CanaryVerdict {
  /** True when the last check passed (and before the first). */
  ok: boolean;
  consecutiveFailures: number;
  /** The last check's time (ISO), null before the first. */
  at: string | null;
  /** How the last check ended; null before the first. */
  result: CanaryResult | null;
  /** Why the last check failed (one line); null when it passed. */
  error: string | null;
}

/** The canary: a Runnable with a verdict. */
export interface Canary extends Runnable {
  verdict(): CanaryVerdict;
  /** One check now (the loop calls it; tests too). An abort of `signal` records nothing. */
  check(signal?: AbortSignal): Promise<void>;
}

/** What the canary is given. */
export interface CanaryDeps {
  /** Time, the interval and each check's timeout. */
  clock: Clock;
  log: Logger;
  registry: Registry;
  /** HTTP (default: the global fetch). */
  fetch?: typeof fetch;
}

/** Builds the canary. */
export function createCanary(options: CanaryOptions, deps: CanaryDeps): Canary {
  const settings = options;
  const doFetch = deps.fetch ?? fetch;
  const answerCheck = answerCheckOf(settings);
  const metrics = canaryMetrics(deps.registry);
  let verdict: CanaryVerdict = { ok: true, consecutiveFailures: 0, at: null, result: null, error: null };
  // The model asked when none is configured: looked up once, and again after a failed check
  // (the server may have been restarted with another model).
  let discovered: string | undefined;

  const post = async (path: string, body: string, signal: AbortSignal): Promise<Response> =>
    doFetch(endpointUrl(settings.url, path), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body,
      signal,
      redirect: 'manual', // a 3xx is an http-error, not a hop to wherever the server points
    });

  const modelToAsk = async (signal: AbortSignal): Promise<{ model: string } | CheckOutcome> => {
    if (settings.model !== undefined) return { model: settings.model };
    if (discovered !== undefined) return { model: discovered };
    const res = await doFetch(endpointUrl(settings.url, MODELS_PATH), {
      headers: { accept: 'application/json' },
      signal,
      redirect: 'manual',
    });
    const text = await readResponseText(res, MAX_CANARY_ANSWER_BYTES);
    if (!res.ok) return httpFailure(`GET ${MODELS_PATH}`, res.status, text);
    const listed = readModelList(text);
    if ('model' in listed) discovered = listed.model;
    return listed;
  };

  const ask = async (signal: AbortSignal): Promise<CheckOutcome> => {
    const model = await modelToAsk(signal);
    if (!('model' in model)) return model;
    const path = API_PATHS[settings.api];
    const body = completionRequestBody({ ...settings, model: model.model });
    const res = await post(path, body, signal);
    const text = await readResponseText(res, MAX_CANARY_ANSWER_BYTES);
    if (!res.ok) return httpFailure(`POST ${path}`, res.status, text);
    const read = readAnswer(settings.api, text);
    return 'answer' in read ? judgeAnswer(read.answer, answerCheck) : read;
  };

  const check = async (signal?: AbortSignal): Promise<void> => {
    const started = deps.clock.monotonic();
    // The timeout runs on the injected clock, so tests drive it without waiting.
    const deadline = new AbortController();
    let timedOut = false;
    const cancel = deps.clock.schedule(settings.timeoutMs, () => {
      timedOut = true;
      deadline.abort(new Error(`no answer within ${settings.timeoutMs} ms`));
    });
    let outcome: CheckOutcome;
    try {
      outcome = await ask(signal ? AbortSignal.any([signal, deadline.signal]) : deadline.signal);
    } catch (error) {
      outcome = timedOut
        ? failure('timeout', `no answer within ${settings.timeoutMs} ms`)
        : thrownOutcome(error);
    } finally {
      cancel();
    }
    if (signal?.aborted) return;
    if (outcome.result !== 'pass') discovered = undefined;
    record(outcome, (deps.clock.monotonic() - started) / 1000);
  };

  const record = (outcome: CheckOutcome, seconds: number): void => {
    const ok = outcome.result === 'pass';
    const consecutiveFailures = ok ? 0 : verdict.consecutiveFailures + 1;
    // One line per failing spell, and one when it ends; the metrics count every check.
    if (ok && !verdict.ok)
      deps.log.info({ failedChecks: verdict.consecutiveFailures }, 'inference canary passes again');
    if (!ok && verdict.ok)
      deps.log.warn({ result: outcome.result, error: outcome.error }, 'inference canary failing');
    verdict = {
      ok,
      consecutiveFailures,
      at: new Date(deps.clock.now()).toISOString(),
      result: outcome.result,
      error: outcome.error,
    };
    metrics.checks.inc({ result: outcome.result });
    metrics.consecutiveFailures.set(consecutiveFailures);
    metrics.duration.observe(seconds);
  };

  return {
    name: 'canary',
    verdict: () => verdict,
    check,
    async start(signal: AbortSignal): Promise<void> {
      deps.log.info(
        {
          url: settings.url,
          api: settings.api,
          model: settings.model ?? '(from /v1/models)',
          check: answerCheck.kind === 'any' ? 'off' : answerCheck.kind,
        },
        'inference canary on',
      );
      while (!signal.aborted) {
        await check(signal);
        try {
          await deps.clock.sleep(settings.intervalSeconds * 1000, signal);
        } catch {
          return;
        }
      }
    },
  };
}

/** A request that threw (its timeout aside): the answer was too large, or the server was not reached. */
function thrownOutcome(error: unknown): CheckOutcome {
  if (error instanceof AnswerTooLargeError) return failure('malformed', error.message);
  // fetch says only "fetch failed"; the socket's code (ECONNREFUSED, ENOTFOUND) is in its cause.
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  const why =
    typeof cause?.code === 'string'
      ? cause.code
      : typeof cause?.message === 'string'
        ? cause.message
        : String((error as Error | null)?.message ?? error);
  return failure('unreachable', `request failed: ${why.split('\n')[0]?.slice(0, 200) ?? ''}`);
}

function canaryMetrics(registry: Registry): {
  checks: Counter<'result'>;
  consecutiveFailures: Gauge;
  duration: Histogram;
} {
  const prefix = metricPrefix('agent');
  const checks = new Counter({
    name: `${prefix}canary_checks_total`,
    help: 'Inference canary checks, by result (pass, wrong-answer, empty-answer, malformed, http-error, timeout, unreachable)',
    labelNames: ['result'],
    registers: [registry],
  });
  for (const result of CANARY_RESULTS) checks.inc({ result }, 0);
  return {
    checks,
    consecutiveFailures: new Gauge({
      name: `${prefix}canary_consecutive_failures`,
      help: 'Consecutive failed inference canary checks',
      registers: [registry],
    }),
    duration: new Histogram({
      name: `${prefix}canary_duration_seconds`,
      help: 'Time an inference canary check took, to its answer or its failure',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
  };
}
