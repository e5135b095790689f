/**
 * The sender: POSTs the agent's snapshots to the ingest function (`${url}/v1/snapshots`,
 * contracts/ingest.ts) and hands each answer's published entry to `onAnswer`.
 *
 * ```
 * enqueue() ─▶ bounded queue (drops the oldest, carrying its XIDs) ─▶ one request at a time ─▶ onAnswer per result
 *                     ▲                                                    │ retryable failure
 *                     └──────────── put back at the front, wait (backoff / Retry-After) ◀─┘
 * ```
 *
 * - **Never blocks sampling.** `enqueue` only queues; past `maxQueue` the oldest snapshot is
 *   dropped and its one-shot events (GPU XIDs) move into the next queued snapshot of its node.
 * - **One request at a time**, so a node's snapshots reach the function in `seq` order (the
 *   engine drops older ones). Whatever queued up meanwhile goes out as one batch
 *   `{"snapshots": […]}` (one snapshot is sent bare), cut at `maxBatch` and `maxBatchBytes`.
 * - **Retries.** A timeout, a connection failure, a 5xx, 408 or 429 puts the batch back and
 *   waits: Retry-After when the function gives one (503, 429), else exponential backoff with
 *   full jitter. A 401 is retried at once with the token read anew (the kubelet may just
 *   have rotated it), then with backoff: a credential problem is not the snapshots' fault.
 * - **No retry** for another 4xx: a bad snapshot never gets better. One snapshot is dropped
 *   (logged, `push_dropped_total{reason="rejected"}`); a batch is resent one snapshot at a
 *   time so only the bad one goes, and a 413 batch is halved.
 * - **Delivered** means a 2xx; results the leader answers `dropped: "duplicate"` (a resend
 *   it already had) count as delivered like accepted ones.
 * - **Stop.** When `start`'s signal aborts, a request in flight finishes (within timeoutMs),
 *   then whatever is queued is sent once more (one request, no retry); what is still left is
 *   dropped (`reason="shutdown"`). Stopping thus takes at most twice timeoutMs.
 */
import {
  SNAPSHOTS_PATH,
  ingestErrorSchema,
  ingestResponseSchema,
  type IngestResponse,
  type IngestResult,
  type SnapshotInput,
} from '../../contracts/index.js';
import {
  describeError,
  type Clock,
  type Logger,
  type Registry,
  type Runnable,
} from '../../platform/index.js';
import {
  createPushMetrics,
  type PushDropReason,
  type PushMetrics,
  type PushResult,
  type SnapshotOutcome,
} from './metrics.js';
import { createHttpPost, type HttpPost } from './http-post.js';
import { SnapshotQueue, type DroppedSnapshot, type QueuedSnapshot } from './queue.js';
import { backoffDelay, parseRetryAfter, retryAfterDelay, type BackoffOptions } from './retry.js';

/** Sends snapshots to the ingest function. */
export interface Sender extends Runnable {
  readonly name: string;
  /**
   * Queues a snapshot; never blocks or throws; over maxQueue drops the oldest, carrying its
   * one-shot events (GPU xid_events) into the next queued snapshot of the same device,
   * de-duplicated. The sender owns the object from here: do not change it afterwards.
   */
  enqueue(snapshot: SnapshotInput): void;
  /** Runnable: sends until signal aborts, then tries once to flush within the grace. */
  start(signal: AbortSignal): Promise<void>;
  /** How pushing goes, for the agent's /v1/health. */
  status(): PushStatus;
}

/** How pushing goes. */
export interface PushStatus {
  /** Snapshots waiting (the request in flight excluded). */
  queued: number;
  /** When the function last answered 2xx (ISO), null before it ever did. */
  lastOkAt: string | null;
  /** The last failed request, null when none failed since the last success. */
  lastFailure: { at: string; result: PushResult; message: string } | null;
  /** Failed requests since the last success. */
  consecutiveFailures: number;
}

/** How the sender sends. */
export interface SenderOptions {
  /** The function's base URL; snapshots are POSTed to `${url}/v1/snapshots`. */
  url: string;
  /** Longest one request may take, answer read included, ms (default 5000). */
  timeoutMs: number;
  /** Most snapshots waiting; beyond, the oldest is dropped (default 60: a minute at 1 Hz). */
  maxQueue: number;
  /** Backoff between retries (defaults 200 ms doubling to 10 s). */
  backoff: BackoffOptions;
  /** Most snapshots in one request (default: maxQueue, at most the function's 500). */
  maxBatch?: number;
  /**
   * Most JSON bytes in one request (default 512 KiB: half the function's 1 MiB limit, which
   * it applies after filling in defaults). A single larger snapshot is still sent.
   */
  maxBatchBytes?: number;
  /** Metric names start `npu_fault_<metricsComponent>_push_` (default `agent`). */
  metricsComponent?: string;
}

/** One delivered snapshot's answer: the function's leader and this snapshot's result. */
export interface PushAnswer {
  leader: string;
  term: number;
  result: IngestResult;
  snapshot: SnapshotInput;
}

/** What the sender is built from. */
export interface SenderDeps {
  /** The bearer token, asked for before every request (tokenFromFile re-reads the file). */
  token: () => string | Promise<string>;
  /** Called once per snapshot of every 200 answer, in order (errors are logged, not thrown). */
  onAnswer: (answer: PushAnswer) => void;
  clock: Clock;
  log: Logger;
  registry: Registry;
  /** How requests are made (default node:http on keep-alive connections, http-post.ts). */
  fetch?: typeof fetch;
  /** Uniform in [0, 1), for the jitter (default Math.random). */
  random?: () => number;
}

/** Defaults of SenderOptions. */
export const SENDER_DEFAULTS = {
  timeoutMs: 5000,
  maxQueue: 60,
  backoff: { initialMs: 200, maxMs: 10_000 },
  maxBatchBytes: 512 * 1024,
  /** The function's own default limit of snapshots per request. */
  maxBatchLimit: 500,
} as const;

/** Builds a sender; nothing is sent until it is started. */
export function createSender(options: SenderOptions, deps: SenderDeps): Sender {
  return new HttpSender(options, deps);
}

/** The minimal fetch the sender needs (global fetch, undici's and http-post.ts's all fit). */
type Fetch = (
  url: string,
  init: {
    method: 'POST';
    headers: Record<string, string>;
    body: string;
    signal: AbortSignal;
    redirect: 'error';
  },
) => Promise<{ status: number; headers: { get(name: string): string | null }; text(): Promise<string> }>;

/** How one request went. */
type Outcome =
  | { result: 'ok'; status: number; text: string }
  | { result: 'http_4xx' | 'http_5xx'; status: number; text: string; retryAfter: string | null }
  | { result: 'timeout' | 'network' | 'token'; message: string };

/** A request that reached the function and was refused. */
type Refusal = Extract<Outcome, { retryAfter: string | null }>;
/** Any request that failed. */
type Failure = Exclude<Outcome, { result: 'ok' }>;

/** What to do after a request: how long to wait before the next (0: go on at once). */
interface Next {
  wait: number;
}

class HttpSender implements Sender {
  readonly name = 'push';
  readonly #endpoint: string;
  readonly #options: Required<Pick<SenderOptions, 'timeoutMs' | 'maxBatch' | 'maxBatchBytes'>> & {
    backoff: BackoffOptions;
  };
  readonly #deps: SenderDeps;
  readonly #log: Logger;
  readonly #metrics: PushMetrics;
  readonly #queue: SnapshotQueue;
  readonly #random: () => number;
  #fetch: Fetch | undefined;
  #poster: HttpPost | undefined;
  #started = false;
  #wake: (() => void) | undefined;
  /** Most snapshots per request now: halved by a 413, restored once the queue is empty. */
  #countLimit: number;
  /** Snapshots still to send one by one, after a batch was refused as a whole. */
  #singles = 0;
  #failures = 0;
  #unauthorized = 0;
  #dropping = false;
  #refusing = false;
  #lastOkAt: string | null = null;
  #lastFailure: PushStatus['lastFailure'] = null;

  constructor(options: SenderOptions, deps: SenderDeps) {
    this.#endpoint = endpointOf(options.url);
    this.#queue = new SnapshotQueue(options.maxQueue);
    const maxBatch = positive(
      options.maxBatch ?? Math.min(options.maxQueue, SENDER_DEFAULTS.maxBatchLimit),
      'maxBatch',
    );
    this.#options = {
      timeoutMs: positive(options.timeoutMs, 'timeoutMs'),
      maxBatch,
      maxBatchBytes: positive(options.maxBatchBytes ?? SENDER_DEFAULTS.maxBatchBytes, 'maxBatchBytes'),
      backoff: {
        initialMs: positive(options.backoff.initialMs, 'backoff.initialMs'),
        maxMs: positive(options.backoff.maxMs, 'backoff.maxMs'),
      },
    };
    this.#countLimit = maxBatch;
    this.#deps = deps;
    this.#log = deps.log;
    this.#metrics = createPushMetrics(deps.registry, options.metricsComponent ?? 'agent');
    this.#random = deps.random ?? Math.random;
    this.#fetch = deps.fetch;
  }

  enqueue(snapshot: SnapshotInput): void {
    this.#noteDrops(this.#queue.push(snapshot));
    this.#metrics.queueLength.set(this.#queue.length);
    this.#wake?.();
  }

  status(): PushStatus {
    return {
      queued: this.#queue.length,
      lastOkAt: this.#lastOkAt,
      lastFailure: this.#lastFailure,
      consecutiveFailures: this.#failures,
    };
  }

  async start(signal: AbortSignal): Promise<void> {
    if (this.#started) throw new Error('push: already started');
    this.#started = true;
    try {
      while (!signal.aborted) {
        if (this.#queue.length === 0) {
          await this.#idle(signal);
          continue;
        }
        const next = await this.#sendBatch();
        if (next.wait > 0) await this.#deps.clock.sleep(next.wait, signal).catch(() => undefined);
      }
      await this.#flush();
    } finally {
      this.#poster?.close();
    }
  }

  /** Resolves when a snapshot is queued or the signal aborts. */
  #idle(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        this.#wake = undefined;
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.#wake = done;
      signal.addEventListener('abort', done, { once: true });
    });
  }

  /** Sends the front of the queue once and decides what comes next. */
  async #sendBatch(): Promise<Next> {
    const limit = this.#singles > 0 ? 1 : this.#countLimit;
    const batch = this.#queue.take(limit, this.#options.maxBatchBytes);
    this.#metrics.queueLength.set(this.#queue.length);
    const outcome = await this.#post(batch);
    if (outcome.result === 'ok') {
      this.#delivered(batch, outcome);
      return { wait: 0 };
    }
    const status = 'status' in outcome ? outcome.status : undefined;
    this.#unauthorized = status === 401 ? this.#unauthorized + 1 : 0;
    if ('retryAfter' in outcome && !isRetryable(outcome.status)) return this.#refused(batch, outcome);
    this.#requeue(batch);
    this.#failed(outcome);
    // A 401 may be a token the kubelet rotated a moment ago: read it again at once, once.
    if (this.#unauthorized === 1) return { wait: 0 };
    return { wait: this.#delay(outcome) };
  }

  /** A 4xx that retrying cannot fix. */
  #refused(batch: QueuedSnapshot[], outcome: Refusal): Next {
    if (batch.length > 1) {
      // Which snapshot is at fault is not worth parsing out of the error: send them one by
      // one (a 413: in halves), so only a bad one is dropped.
      if (outcome.status === 413) this.#countLimit = Math.max(1, Math.floor(batch.length / 2));
      else this.#singles = batch.length;
      this.#requeue(batch);
      this.#failed(outcome);
      return { wait: 0 };
    }
    this.#failed(outcome);
    if (this.#singles > 0) this.#singles--;
    const [item] = batch;
    this.#drop('rejected', batch.length);
    const fields = {
      status: outcome.status,
      error: errorOf(outcome.text),
      seq: item?.snapshot.seq,
      collectedAt: item?.snapshot.collected_at,
    };
    // A wrong URL or a token of another node refuses every snapshot: warn once, not at 1 Hz.
    if (!this.#refusing) this.#log.warn(fields, 'snapshot refused by the function; dropped');
    else this.#log.debug(fields, 'snapshot refused by the function; dropped');
    this.#refusing = true;
    return { wait: 0 };
  }

  /** A 2xx: the snapshots are delivered. */
  #delivered(batch: QueuedSnapshot[], outcome: Extract<Outcome, { result: 'ok' }>): void {
    if (this.#failures > 0)
      this.#log.info({ failures: this.#failures, queued: this.#queue.length }, 'push recovered');
    this.#failures = 0;
    this.#unauthorized = 0;
    this.#dropping = false;
    this.#refusing = false;
    this.#lastFailure = null;
    this.#lastOkAt = new Date(this.#deps.clock.now()).toISOString();
    this.#singles = Math.max(0, this.#singles - batch.length);
    if (this.#queue.length === 0) this.#countLimit = this.#options.maxBatch;
    const answer = outcome.status === 200 ? this.#answerOf(batch, outcome.text) : undefined;
    if (!answer) return;
    answer.results.forEach((result, i) => {
      this.#metrics.snapshots.inc({ outcome: outcomeOf(result) });
      const snapshot = batch[i]?.snapshot as SnapshotInput;
      try {
        this.#deps.onAnswer({ leader: answer.leader, term: answer.term, result, snapshot });
      } catch (error) {
        this.#log.error({ err: error }, 'onAnswer failed');
      }
    });
  }

  /** The 200 answer, checked to answer each snapshot of the batch; undefined (logged) when not. */
  #answerOf(batch: QueuedSnapshot[], text: string): IngestResponse | undefined {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const parsed = ingestResponseSchema.safeParse(json);
    const wrong = !parsed.success
      ? `not an ingest response (${parsed.error.issues[0]?.path.join('.') || '/'}: ${parsed.error.issues[0]?.message})`
      : parsed.data.results.length !== batch.length
        ? `${parsed.data.results.length} results for ${batch.length} snapshots`
        : parsed.data.results.find((r, i) => r.node !== batch[i]?.snapshot.node)
          ? 'a result for another node'
          : undefined;
    if (wrong === undefined && parsed.success) return parsed.data;
    // Delivered all the same (the function answers 200 only once the leader has them).
    this.#log.warn({ problem: wrong }, 'answer of the function not understood; entry not updated');
    return undefined;
  }

  #failed(outcome: Failure): void {
    this.#failures++;
    const message =
      'message' in outcome ? outcome.message : `${outcome.status} ${describeAnswer(outcome.text)}`;
    this.#lastFailure = {
      at: new Date(this.#deps.clock.now()).toISOString(),
      result: outcome.result,
      message,
    };
    const fields = { result: outcome.result, message, queued: this.#queue.length };
    if (this.#failures === 1) this.#log.warn(fields, 'push failed; retrying');
    else this.#log.debug({ ...fields, failures: this.#failures }, 'push failed again');
  }

  /** How long to wait before the next try. */
  #delay(outcome: Failure): number {
    const { backoff } = this.#options;
    if ('retryAfter' in outcome && (outcome.status === 503 || outcome.status === 429)) {
      const asked = parseRetryAfter(outcome.retryAfter, this.#deps.clock.now());
      if (asked !== undefined) return retryAfterDelay(asked, backoff.initialMs, this.#random);
    }
    return backoffDelay(backoff, this.#failures, this.#random);
  }

  #requeue(batch: readonly QueuedSnapshot[]): void {
    this.#noteDrops(this.#queue.requeue(batch));
    this.#metrics.queueLength.set(this.#queue.length);
  }

  #noteDrops(dropped: readonly DroppedSnapshot[]): void {
    if (dropped.length === 0) return;
    this.#drop('queue_full', dropped.length);
    const lost = dropped.reduce((sum, d) => sum + d.lost, 0);
    const carried = dropped.filter((d) => d.carried).length;
    if (lost > 0) this.#log.warn({ lost }, 'queue full: events of a dropped snapshot had nowhere to go');
    const fields = { dropped: dropped.length, carried, maxQueue: this.#queue.max };
    // Once per outage at warn: at 1 Hz a line per drop would flood the log.
    if (!this.#dropping) this.#log.warn(fields, 'queue full: dropping the oldest snapshots');
    else this.#log.debug(fields, 'queue full: dropped the oldest snapshot');
    this.#dropping = true;
  }

  #drop(reason: PushDropReason, count: number): void {
    this.#metrics.dropped.inc({ reason }, count);
  }

  /** At stop: one last request for what is queued; the rest is dropped. */
  async #flush(): Promise<void> {
    if (this.#queue.length === 0) return;
    const batch = this.#queue.take(this.#options.maxBatch, this.#options.maxBatchBytes);
    const outcome = await this.#post(batch);
    if (outcome.result === 'ok') this.#delivered(batch, outcome);
    else this.#queue.requeue(batch);
    const left = this.#queue.drain().length;
    this.#metrics.queueLength.set(0);
    if (left === 0) return;
    this.#drop('shutdown', left);
    this.#log.warn({ dropped: left, result: outcome.result }, 'stopping: snapshots not sent');
  }

  /** One request with the batch; never throws. */
  async #post(batch: readonly QueuedSnapshot[]): Promise<Outcome> {
    const body =
      batch.length === 1
        ? (batch[0] as QueuedSnapshot).json
        : `{"snapshots":[${batch.map((item) => item.json).join(',')}]}`;
    let token: string;
    try {
      token = await this.#deps.token();
    } catch (error) {
      const outcome: Outcome = { result: 'token', message: `token: ${describeError(error)}` };
      this.#metrics.requests.inc({ result: outcome.result });
      return outcome;
    }
    const { clock } = this.#deps;
    const began = clock.monotonic();
    const timeout = new AbortController();
    const cancel = clock.schedule(this.#options.timeoutMs, () =>
      timeout.abort(new Error(`no answer within ${this.#options.timeoutMs} ms`)),
    );
    let outcome: Outcome;
    try {
      const response = await this.#fetcher()(this.#endpoint, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json',
        },
        body,
        signal: timeout.signal,
        redirect: 'error',
      });
      const text = await response.text();
      outcome = outcomeOfAnswer(response.status, text, response.headers.get('retry-after'));
    } catch (error) {
      outcome = timeout.signal.aborted
        ? { result: 'timeout', message: `no answer within ${this.#options.timeoutMs} ms` }
        : { result: 'network', message: describeError(error) };
    } finally {
      cancel();
    }
    this.#metrics.requests.inc({ result: outcome.result });
    this.#metrics.duration.observe((clock.monotonic() - began) / 1000);
    return outcome;
  }

  /** The fetch in use: the injected one, else node:http on keep-alive connections made on first use. */
  #fetcher(): Fetch {
    if (!this.#fetch) {
      const poster = createHttpPost();
      this.#poster = poster;
      this.#fetch = poster;
    }
    return this.#fetch;
  }
}

function outcomeOfAnswer(status: number, text: string, retryAfter: string | null): Outcome {
  if (status >= 200 && status < 300) return { result: 'ok', status, text };
  return { result: status >= 500 ? 'http_5xx' : 'http_4xx', status, text, retryAfter };
}

/** Anything but a 4xx, and the 4xx that say "later" (408, 429) or "who are you" (401). */
function isRetryable(status: number): boolean {
  return status < 400 || status >= 500 || status === 401 || status === 408 || status === 429;
}

function outcomeOf(result: IngestResult): SnapshotOutcome {
  if (result.accepted) return 'accepted';
  return result.dropped ?? 'refused';
}

/** `code: message` of an error answer, or the start of whatever it is. */
function describeAnswer(text: string): string {
  const error = errorOf(text);
  return error ? `${error.code}: ${error.message}` : text.slice(0, 120).replace(/\s+/g, ' ');
}

function errorOf(text: string): { code: string; message: string } | undefined {
  try {
    const parsed = ingestErrorSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data.error : undefined;
  } catch {
    return undefined;
  }
}

function endpointOf(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new RangeError(`push url: expected an http(s) URL, got "${url}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new RangeError(`push url: expected an http(s) URL, got "${url}"`);
  if (parsed.search || parsed.hash)
    throw new RangeError(`push url: expected no query or fragment, got "${url}"`);
  return `${parsed.origin}${parsed.pathname.replace(/\/+$/, '')}${SNAPSHOTS_PATH}`;
}

function positive(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1)
    throw new RangeError(`push ${name}: expected a positive integer, got ${value}`);
  return value;
}
