/**
 * An in-memory PodClient for unit tests: pods on nodes, eviction answers scripted per pod
 * (refused n times, 404, an API error, a call that hangs until aborted), and how long an
 * evicted pod takes to go (at once, after a while on the given Clock, or never).
 */
import { K8sApiError, type Clock } from '../../platform/index.js';
import { podKey, type EvictionResult, type PodClient, type PodSummary } from './pod-client.js';

/**
 * One answer to an eviction: `evict` (accepted), `gone` (404), `blocked` (429, a disruption
 * budget), `hang` (never answers; rejects when the call's signal aborts), or an API error
 * with that HTTP status.
 */
export type FakeEvictionAnswer = 'evict' | 'gone' | 'blocked' | 'hang' | { status: number; message?: string };

/** How a pod behaves: eviction answers in turn, then `then` for every later one. */
export interface FakePodScript {
  answers?: FakeEvictionAnswer[];
  /** The answer once `answers` are used up (default `evict`). */
  then?: FakeEvictionAnswer;
  /** How long an evicted or deleted pod takes to go (default 0: at once; `never`: it stays terminating). */
  terminateAfterMs?: number | 'never';
}

/** The message the API gives with a 429 from a disruption budget. */
export const FAKE_PDB_MESSAGE =
  "Cannot evict pod as it would violate the pod's disruption budget. The disruption budget pdb needs 1 healthy pods and has 1 currently";

interface FakePod {
  node: string;
  pod: PodSummary;
  script: Required<Pick<FakePodScript, 'answers' | 'then' | 'terminateAfterMs'>>;
}

/** A pod summary with defaults (a Running pod in `default`, uid `uid-<name>`, nothing special about it). */
export function fakePod(fields: Partial<PodSummary> & { name: string }): PodSummary {
  return {
    namespace: 'default',
    uid: `uid-${fields.name}`,
    phase: 'Running',
    terminating: false,
    daemonSet: false,
    mirror: false,
    annotations: {},
    emptyDirVolumes: [],
    deviceResources: [],
    ...fields,
  };
}

/** The fake. `clock` is needed only for pods that take time to go. */
export class FakePodClient implements PodClient {
  /** Every call, in order: `list n1`, `evict ns/a uid-1`, `get ns/a`, `delete ns/a uid-1`. */
  readonly calls: string[] = [];
  /** Errors the next lists throw, one each. */
  readonly listFailures: Error[] = [];
  /** Errors the next deletes throw, one each. */
  readonly deleteFailures: Error[] = [];
  readonly #pods = new Map<string, FakePod>();
  readonly #clock: Clock | undefined;

  constructor(options: { clock?: Clock } = {}) {
    this.#clock = options.clock;
  }

  /** Puts `pod` on `node` (replacing any pod of that name); returns it. */
  add(pod: PodSummary, node = 'n1', script: FakePodScript = {}): PodSummary {
    this.#pods.set(podKey(pod), {
      node,
      pod,
      script: {
        answers: [...(script.answers ?? [])],
        then: script.then ?? 'evict',
        terminateAfterMs: script.terminateAfterMs ?? 0,
      },
    });
    return pod;
  }

  /** Whether `namespace/name` still exists (in any incarnation). */
  has(key: string): boolean {
    return this.#pods.has(key);
  }

  /** The current pod `namespace/name`. */
  pod(key: string): PodSummary | undefined {
    return this.#pods.get(key)?.pod;
  }

  /** Removes a pod, as if its kubelet finished it or someone deleted it. */
  remove(key: string): void {
    this.#pods.delete(key);
  }

  /** Evictions asked for `key` so far. */
  evictions(key: string): number {
    return this.calls.filter((call) => call.startsWith(`evict ${key} `) || call === `evict ${key}`).length;
  }

  list(node: string, signal: AbortSignal): Promise<PodSummary[]> {
    this.calls.push(`list ${node}`);
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    const failure = this.listFailures.shift();
    if (failure) return Promise.reject(failure);
    return Promise.resolve([...this.#pods.values()].filter((p) => p.node === node).map((p) => p.pod));
  }

  evict(
    namespace: string,
    name: string,
    uid: string | undefined,
    signal: AbortSignal,
  ): Promise<EvictionResult> {
    const key = `${namespace}/${name}`;
    this.calls.push(uid ? `evict ${key} ${uid}` : `evict ${key}`);
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    const entry = this.#pods.get(key);
    if (!entry || (uid && entry.pod.uid !== uid)) return Promise.resolve({ result: 'gone' });
    // The API accepts the eviction of a pod already going without asking its budget.
    if (entry.pod.terminating) return Promise.resolve({ result: 'evicted' });
    const answer = entry.script.answers.shift() ?? entry.script.then;
    if (answer === 'hang') return hang(signal);
    if (answer === 'gone') {
      this.#pods.delete(key);
      return Promise.resolve({ result: 'gone' });
    }
    if (answer === 'blocked') return Promise.resolve({ result: 'blocked', message: FAKE_PDB_MESSAGE });
    if (answer !== 'evict') return Promise.reject(new K8sApiError(answer.status, undefined, answer.message));
    this.#terminate(key, entry);
    return Promise.resolve({ result: 'evicted' });
  }

  get(namespace: string, name: string, signal: AbortSignal): Promise<PodSummary | null> {
    const key = `${namespace}/${name}`;
    this.calls.push(`get ${key}`);
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    return Promise.resolve(this.#pods.get(key)?.pod ?? null);
  }

  delete(namespace: string, name: string, uid: string, signal: AbortSignal): Promise<'deleted' | 'gone'> {
    const key = `${namespace}/${name}`;
    this.calls.push(`delete ${key} ${uid}`);
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    const failure = this.deleteFailures.shift();
    if (failure) return Promise.reject(failure);
    const entry = this.#pods.get(key);
    if (!entry || entry.pod.uid !== uid) return Promise.resolve('gone');
    this.#terminate(key, entry);
    return Promise.resolve('deleted');
  }

  /** Marks the pod terminating, and removes it when its script says. */
  #terminate(key: string, entry: FakePod): void {
    entry.pod = { ...entry.pod, terminating: true };
    const after = entry.script.terminateAfterMs;
    if (after === 'never') return;
    if (after === 0) {
      this.#pods.delete(key);
      return;
    }
    if (!this.#clock) throw new Error('FakePodClient: a pod that takes time to go needs a clock');
    this.#clock.schedule(after, () => {
      if (this.#pods.get(key) === entry) this.#pods.delete(key);
    });
  }
}

/** A call that never answers: rejects with the signal's reason when it aborts. */
function hang<T>(signal: AbortSignal): Promise<T> {
  return new Promise<T>((_resolve, reject) => {
    signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
  });
}
