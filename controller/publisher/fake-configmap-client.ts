/**
 * An in-memory ConfigMapClient that behaves as the apiserver does where the publisher
 * depends on it: resourceVersions (one counter for the whole store, as etcd's revision),
 * uids, 409 AlreadyExists on a second create, 409 Conflict on a replace at a stale
 * resourceVersion or a delete whose preconditions no longer hold, 404 for a missing object
 * or namespace. Tests inject errors (`failNext`, `failAlways`), latency (`delay`, on the
 * given clock, cancelled by the request's signal) and another writer's updates (`put`,
 * `beforeNext`).
 */
import { K8sApiError, type Clock } from '../../platform/index.js';
import {
  describeConfigMap,
  type ConfigMapClient,
  type ConfigMapContent,
  type ConfigMapKey,
  type DeletePreconditions,
  type StoredConfigMap,
} from './configmap-client.js';

/** A ConfigMapClient call. */
export type ConfigMapOperation = 'get' | 'create' | 'replace' | 'delete';

/** A call as the fake received it. */
export interface ConfigMapCall {
  readonly op: ConfigMapOperation;
  /** `namespace/name`. */
  readonly key: string;
  /** clock.monotonic() when the call arrived. */
  readonly at: number;
  /** The resourceVersion a replace named, or a delete's precondition. */
  readonly resourceVersion?: string;
  readonly content?: ConfigMapContent;
  /** For writes that reached the store: clock.monotonic() when it was stored. */
  storedAt?: number;
  /** How it ended: 'ok', or the error's HTTP status (or 'error'). */
  result?: 'ok' | number | 'error';
}

interface Injected {
  readonly op: ConfigMapOperation | 'any';
  readonly action: (call: ConfigMapCall) => unknown;
  remaining: number;
}

/** An in-memory ConfigMap store ("an apiserver"), shared by every client given it. */
export class FakeConfigMapClient implements ConfigMapClient {
  readonly #clock: Clock;
  readonly #objects = new Map<string, StoredConfigMap>();
  readonly #injected: Injected[] = [];
  readonly #delays = new Map<ConfigMapOperation, number>();
  /** Namespaces that exist; undefined: every namespace exists. */
  #namespaces: Set<string> | undefined;
  #version = 1000;
  #uid = 0;
  /** Every call received, in order (failed ones included). */
  readonly calls: ConfigMapCall[] = [];

  /** `clock` times delays and stamps calls. */
  constructor(clock: Clock) {
    this.#clock = clock;
  }

  async get(key: ConfigMapKey, signal: AbortSignal): Promise<StoredConfigMap | undefined> {
    return this.#handle({ op: 'get', key: describeConfigMap(key), at: this.#clock.monotonic() }, signal, () =>
      this.peek(key),
    );
  }

  async create(key: ConfigMapKey, content: ConfigMapContent, signal: AbortSignal): Promise<StoredConfigMap> {
    const call = { op: 'create', key: describeConfigMap(key), at: this.#clock.monotonic(), content } as const;
    return this.#handle(call, signal, () => {
      this.#requireNamespace(key);
      if (this.#objects.has(describeConfigMap(key)))
        throw new K8sApiError(409, 'AlreadyExists', `configmaps "${key.name}" already exists`);
      return this.#store(key, content.labels, content.data, `uid-${++this.#uid}`);
    });
  }

  async replace(
    key: ConfigMapKey,
    resourceVersion: string,
    content: ConfigMapContent,
    signal: AbortSignal,
  ): Promise<StoredConfigMap> {
    const call = {
      op: 'replace',
      key: describeConfigMap(key),
      at: this.#clock.monotonic(),
      resourceVersion,
      content,
    } as const;
    return this.#handle(call, signal, () => {
      const current = this.#objects.get(describeConfigMap(key));
      if (!current) throw new K8sApiError(404, 'NotFound', `configmaps "${key.name}" not found`);
      if (current.resourceVersion !== resourceVersion) throw conflict(key.name);
      return this.#store(key, { ...current.labels, ...content.labels }, content.data, current.uid);
    });
  }

  async delete(key: ConfigMapKey, preconditions: DeletePreconditions, signal: AbortSignal): Promise<void> {
    const call = {
      op: 'delete',
      key: describeConfigMap(key),
      at: this.#clock.monotonic(),
      resourceVersion: preconditions.resourceVersion,
    } as const;
    await this.#handle(call, signal, () => {
      const current = this.#objects.get(describeConfigMap(key));
      if (!current) throw new K8sApiError(404, 'NotFound', `configmaps "${key.name}" not found`);
      if (current.uid !== preconditions.uid || current.resourceVersion !== preconditions.resourceVersion)
        throw conflict(key.name);
      this.#objects.delete(describeConfigMap(key));
    });
  }

  /** The stored ConfigMap (no call recorded). */
  peek(key: ConfigMapKey): StoredConfigMap | undefined {
    return this.#objects.get(describeConfigMap(key));
  }

  /** Writes it as another client would (creating it if missing), bumping its resourceVersion; no call recorded. */
  put(
    key: ConfigMapKey,
    content: { labels?: Record<string, string>; data: Record<string, string> },
  ): StoredConfigMap {
    const current = this.#objects.get(describeConfigMap(key));
    return this.#store(
      key,
      content.labels ?? current?.labels ?? {},
      content.data,
      current?.uid ?? `uid-${++this.#uid}`,
    );
  }

  /** Deletes it as another client would (no call recorded). */
  remove(key: ConfigMapKey): void {
    this.#objects.delete(describeConfigMap(key));
  }

  /** From now on only these namespaces exist (a create elsewhere is 404); undefined: all do. */
  setNamespaces(namespaces: Iterable<string> | undefined): void {
    this.#namespaces = namespaces === undefined ? undefined : new Set(namespaces);
  }

  /** The next `times` calls of `op` (or of any operation) fail with `error`, before reaching the store. */
  failNext(op: ConfigMapOperation | 'any', error: unknown, times = 1): void {
    this.#injected.push({
      op,
      action: () => {
        throw error;
      },
      remaining: times,
    });
  }

  /** Every call of `op` fails with `error` from now on; `undefined` heals it. */
  failAlways(op: ConfigMapOperation | 'any', error: unknown): void {
    for (let i = this.#injected.length - 1; i >= 0; i--) {
      if (this.#injected[i]?.op === op) this.#injected.splice(i, 1);
    }
    if (error !== undefined) this.failNext(op, error, Infinity);
  }

  /**
   * Runs `action` when the next `times` calls of `op` arrive, before they reach the store
   * (another writer slipping in between: `beforeNext('replace', () => client.put(...))`).
   */
  beforeNext(op: ConfigMapOperation | 'any', action: (call: ConfigMapCall) => void, times = 1): void {
    this.#injected.push({ op, action, remaining: times });
  }

  /** Every call of `op` waits `ms` on the clock before it reaches the store; `undefined` removes the delay. */
  delay(op: ConfigMapOperation, ms: number | undefined): void {
    if (ms === undefined) this.#delays.delete(op);
    else this.#delays.set(op, ms);
  }

  /** Records the call, waits its delay (abortable), runs what is injected, then `apply`. */
  async #handle<T>(call: ConfigMapCall, signal: AbortSignal, apply: () => T): Promise<T> {
    this.calls.push(call);
    try {
      signal.throwIfAborted();
      const ms = this.#delays.get(call.op);
      if (ms !== undefined) await this.#clock.sleep(ms, signal);
      const injected = this.#injected.find((i) => i.op === call.op || i.op === 'any');
      if (injected) {
        injected.remaining -= 1;
        if (injected.remaining <= 0) this.#injected.splice(this.#injected.indexOf(injected), 1);
        injected.action(call);
      }
      const result = apply();
      call.result = 'ok';
      if (call.op !== 'get') call.storedAt = this.#clock.monotonic();
      return result;
    } catch (error) {
      call.result = error instanceof K8sApiError ? error.apiStatus : 'error';
      throw error;
    }
  }

  #requireNamespace(key: ConfigMapKey): void {
    if (this.#namespaces && !this.#namespaces.has(key.namespace))
      throw new K8sApiError(404, 'NotFound', `namespaces "${key.namespace}" not found`);
  }

  #store(
    key: ConfigMapKey,
    labels: Readonly<Record<string, string>>,
    data: Readonly<Record<string, string>>,
    uid: string,
  ): StoredConfigMap {
    const stored: StoredConfigMap = {
      resourceVersion: String(++this.#version),
      uid,
      labels: { ...labels },
      data: { ...data },
    };
    this.#objects.set(describeConfigMap(key), stored);
    return stored;
  }
}

function conflict(name: string): K8sApiError {
  return new K8sApiError(
    409,
    'Conflict',
    `Operation cannot be fulfilled on configmaps "${name}": the object has been modified; please apply your changes to the latest version and try again`,
  );
}
