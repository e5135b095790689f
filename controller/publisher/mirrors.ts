/**
 * Mirrors of the status ConfigMap (CONTRACT §5.5): a Runnable, leader only, one per term,
 * that keeps a copy (same name, same data) in every namespace of a set the namespace watch
 * maintains (those labelled `npu-fault.io/status-mirror=true`), because a pod mounts only
 * ConfigMaps of its own namespace.
 *
 * - **Content** is the data of the last acknowledged status write (`publish`), without the pods
 *   on its devices (CONTRACT §5.5): a copy is readable by every tenant of its namespace, and
 *   who holds a device names other tenants' pods. The main ConfigMap keeps them.
 * - **Pace, per namespace.** A changed document is copied at most every `intervalMs` (10 s);
 *   when only its timestamp moved, every `heartbeatMs` (60 s): a mounted copy refreshes on
 *   the kubelet's sync, about once a minute, so copying each heartbeat would cost writes
 *   and watch traffic in every namespace for nothing. A failed attempt waits `intervalMs`.
 * - **Ownership.** A copy carries `app.kubernetes.io/managed-by: npu-fault-controller`. A
 *   ConfigMap of that name without it is someone else's: it is never written or deleted
 *   (logged once, counted in `mirror_foreign_configmaps`), and looked at again every
 *   `intervalMs` in case its owner removes it.
 * - **Leaving the set** deletes the copy, with the uid and resourceVersion last seen as
 *   preconditions, so a copy someone changed since (or a foreign object that took the
 *   name) is never deleted blindly; after a 409 it reads again and decides next round.
 * - Writes are updates conditioned on the resourceVersion last seen; a 409 reads again next
 *   round. There is no term rule here (only the leader writes mirrors, and the fence is
 *   checked before every request).
 * - Its RBAC is get/update/delete by name plus create: it cannot list ConfigMaps, so it
 *   knows only the copies it saw this term. A copy left in a namespace that lost its label
 *   while no leader ran is not found (the namespace watch reports only labelled ones).
 * - **Opt-in per namespace.** That RBAC is granted only where the operator binds the
 *   ClusterRole npu-fault-status-mirror (k8s/controller/status-mirror-rbac.yaml). A labelled
 *   namespace without the binding answers 403: logged once (warn, naming the binding), counted
 *   in `mirror_forbidden_namespaces`, and asked again only every `heartbeatMs`, so a binding
 *   added later is used within a minute and a missing one costs one request a minute. A
 *   namespace that leaves the set while forbidden is forgotten (its copy, if any, is left).
 * - Namespaces are handled one request at a time.
 */
import {
  STATUS_CONFIGMAP_NAME,
  documentWithoutHolders,
  type PublishedDocument,
} from '../../contracts/index.js';
import {
  isConflict,
  isForbidden,
  isNotFound,
  type Clock,
  type Logger,
  type Registry,
  type Runnable,
} from '../../platform/index.js';
import type { Leadership } from '../leader-election/index.js';
import { parseMirrorsConfig, type MirrorsConfig, type MirrorsConfigInput } from './config.js';
import type { ConfigMapClient, ConfigMapKey, StoredConfigMap } from './configmap-client.js';
import { publisherMetrics, timedWrite, type PublisherMetrics } from './metrics.js';
import { withRequestTimeout } from './request-signal.js';
import { MANAGED_BY_LABEL, STATUS_LABELS, serializeDocument, type StatusData } from './status-data.js';
import { Wakeable } from './wake.js';

/** What the operator binds in a namespace to opt it in (k8s/controller/status-mirror-rbac.yaml). */
export const MIRROR_CLUSTER_ROLE = 'npu-fault-status-mirror';

/** The namespaces that should hold a copy, as the namespace watch maintains them. */
export interface MirrorNamespaces {
  /** The namespaces labelled for a mirror, now. */
  namespaces(): ReadonlySet<string>;
  /** Calls `listener` whenever the set may have changed; returns the unsubscribe function. */
  onChange(listener: () => void): () => void;
}

/** What mirrors copy: an acknowledged status write (its document, data and content without timestamp). */
export interface MirrorSource {
  readonly document: PublishedDocument;
  readonly data: StatusData;
  readonly content: string;
}

/** What the mirrors are built from. */
export interface StatusMirrorsDeps {
  readonly client: ConfigMapClient;
  readonly namespaces: MirrorNamespaces;
  /** The elector's fence, checked immediately before every request. */
  leadership(): Leadership;
  readonly clock: Clock;
  readonly log: Logger;
  readonly registry: Registry;
}

/** Where the mirrors go. */
export interface StatusMirrorsOptions {
  /** The term they are written in; the fence must name it. */
  readonly term: number;
  /** The status ConfigMap's own namespace: never mirrored into (it holds the original). */
  readonly statusNamespace: string;
  /** The ConfigMap name (default npu-fault-status-v3, as the status). */
  readonly name?: string;
  readonly config?: MirrorsConfigInput;
  /** Metric names start `npu_fault_<metricsComponent>_` (default `controller`). */
  readonly metricsComponent?: string;
}

/** The mirrors of one term. */
export interface StatusMirrors extends Runnable {
  /** The status was written (call from the publisher's onWritten): copy this. */
  publish(source: MirrorSource): void;
}

/** Builds the mirrors of one term; start it with the term's signal. */
export function createStatusMirrors(deps: StatusMirrorsDeps, options: StatusMirrorsOptions): StatusMirrors {
  return new TermMirrors(deps, options);
}

/** What this term knows of one namespace's copy. */
interface MirrorState {
  /** Our copy as last stored (undefined: not read yet, or to be read again). */
  ours: StoredConfigMap | undefined;
  /** A ConfigMap of the name that is not ours was found there. */
  foreign: boolean;
  /** The last attempt was refused (403): the namespace is labelled but not opted in by RBAC. */
  forbidden: boolean;
  /** The content last copied there. */
  content: string | undefined;
  /** When the last attempt (write, read or delete) began; -Infinity before the first. */
  attemptedAt: number;
}

class TermMirrors implements StatusMirrors {
  readonly name = 'status-mirrors';
  readonly #deps: StatusMirrorsDeps;
  readonly #options: StatusMirrorsOptions;
  readonly #config: MirrorsConfig;
  readonly #metrics: PublisherMetrics;
  readonly #log: Logger;
  readonly #wake: Wakeable;
  readonly #states = new Map<string, MirrorState>();
  readonly #name: string;
  #source: MirrorSource | undefined;
  #signal: AbortSignal = AbortSignal.abort();

  constructor(deps: StatusMirrorsDeps, options: StatusMirrorsOptions) {
    this.#deps = deps;
    this.#options = options;
    this.#config = parseMirrorsConfig(options.config);
    this.#metrics = publisherMetrics(deps.registry, options.metricsComponent);
    this.#log = deps.log.child({ term: options.term });
    this.#wake = new Wakeable(deps.clock);
    this.#name = options.name ?? STATUS_CONFIGMAP_NAME;
  }

  publish(source: MirrorSource): void {
    const mirrored = documentWithoutHolders(source.document);
    // Re-serialised only when some device carried pods; otherwise the written data as is.
    this.#source = mirrored === source.document ? source : serializeDocument(mirrored);
    this.#wake.wake();
  }

  async start(signal: AbortSignal): Promise<void> {
    this.#signal = signal;
    const unsubscribe = this.#deps.namespaces.onChange(() => this.#wake.wake());
    try {
      while (!signal.aborted) {
        const next = await this.#round();
        if (next === 'stop') break;
        await this.#wake.sleep(next - this.#deps.clock.monotonic(), signal);
      }
    } finally {
      unsubscribe();
    }
  }

  /** Brings every namespace as far as it is due; returns when the next one falls due. */
  async #round(): Promise<number | 'stop'> {
    const wanted = new Set(this.#deps.namespaces.namespaces());
    wanted.delete(this.#options.statusNamespace);
    let next = Infinity;
    for (const namespace of wanted) {
      const state = this.#stateOf(namespace);
      const due = this.#dueAt(state);
      if (due > this.#deps.clock.monotonic()) {
        next = Math.min(next, due);
        continue;
      }
      if ((await this.#guarded(namespace, state, () => this.#copy(namespace, state))) === 'stop')
        return 'stop';
      next = Math.min(next, this.#dueAt(state));
    }
    for (const [namespace, state] of this.#states) {
      if (wanted.has(namespace)) continue;
      const due = state.attemptedAt + this.#config.intervalMs;
      // A copy this term wrote goes at once; a retry after a failed delete waits its interval.
      if (state.ours === undefined && due > this.#deps.clock.monotonic()) {
        next = Math.min(next, due);
        continue;
      }
      if ((await this.#guarded(namespace, state, () => this.#remove(namespace, state))) === 'stop')
        return 'stop';
      if (this.#states.has(namespace)) next = Math.min(next, state.attemptedAt + this.#config.intervalMs);
    }
    this.#metrics.mirrorsForeign.set([...wanted].filter((n) => this.#states.get(n)?.foreign).length);
    this.#countForbidden();
    return next;
  }

  /** When a namespace next needs a request (Infinity: nothing to copy yet). */
  #dueAt(state: MirrorState): number {
    const source = this.#source;
    if (!source) return Infinity;
    // Refused by RBAC: the operator has to act, so ask only as often as a heartbeat.
    if (state.forbidden) return state.attemptedAt + this.#config.heartbeatMs;
    const unchanged = !state.foreign && state.content === source.content;
    return state.attemptedAt + (unchanged ? this.#config.heartbeatMs : this.#config.intervalMs);
  }

  /** Runs one namespace's step, logging failures (the step is retried after intervalMs). */
  async #guarded(
    namespace: string,
    state: MirrorState,
    step: () => Promise<void>,
  ): Promise<'stop' | undefined> {
    state.attemptedAt = this.#deps.clock.monotonic();
    try {
      await step();
      if (state.forbidden) {
        state.forbidden = false;
        this.#countForbidden();
        this.#log.info({ namespace }, 'mirror namespace opted in: the controller may write its copy now');
      }
      return undefined;
    } catch (error) {
      if (this.#signal.aborted || error instanceof NotLeading) return 'stop';
      state.ours = undefined;
      if (isForbidden(error)) {
        if (!state.forbidden)
          this.#log.warn(
            { namespace, clusterRole: MIRROR_CLUSTER_ROLE, err: error },
            `namespace labelled for a mirror, but the controller may not write ConfigMaps there: bind the ClusterRole ${MIRROR_CLUSTER_ROLE} to the controller's ServiceAccount with a RoleBinding in it (asked again every heartbeat)`,
          );
        state.forbidden = true;
        this.#countForbidden();
        return undefined;
      }
      const level = isConflict(error) || isNotFound(error) ? 'info' : 'warn';
      this.#log[level]({ namespace, err: error }, 'mirror step failed; trying again later');
      return undefined;
    }
  }

  /** Writes the current data into `namespace` (reading first when its copy is not known). */
  async #copy(namespace: string, state: MirrorState): Promise<void> {
    const source = this.#source;
    if (!source) return;
    const key = this.#key(namespace);
    if (state.ours === undefined) {
      const stored = await this.#request((s) => this.#deps.client.get(key, s));
      if (stored && !isOurs(stored)) {
        if (!state.foreign)
          this.#log.warn({ namespace }, 'a ConfigMap of the mirror name is not ours: leaving it alone');
        state.foreign = true;
        return;
      }
      state.foreign = false;
      if (!stored) {
        state.ours = await this.#write((s) =>
          this.#deps.client.create(key, { labels: STATUS_LABELS, data: source.data }, s),
        );
        state.content = source.content;
        this.#log.info({ namespace }, 'mirror created');
        return;
      }
      state.ours = stored;
    }
    const resourceVersion = state.ours.resourceVersion;
    state.ours = await this.#write((s) =>
      this.#deps.client.replace(key, resourceVersion, { labels: STATUS_LABELS, data: source.data }, s),
    );
    state.content = source.content;
  }

  /** Deletes our copy from a namespace that left the set; forgets the namespace when done. */
  async #remove(namespace: string, state: MirrorState): Promise<void> {
    const key = this.#key(namespace);
    let ours = state.ours;
    if (state.forbidden) {
      // Refused there at the last attempt: a read or delete would be refused too. A copy
      // written before the binding went stays; the operator removed our access to it.
      this.#states.delete(namespace);
      return;
    }
    if (ours === undefined) {
      const stored = await this.#request((s) => this.#deps.client.get(key, s));
      if (!stored || !isOurs(stored)) {
        this.#states.delete(namespace);
        return;
      }
      ours = stored;
    }
    const preconditions = { uid: ours.uid, resourceVersion: ours.resourceVersion };
    try {
      await this.#write((s) => this.#deps.client.delete(key, preconditions, s));
      this.#log.info({ namespace }, 'mirror removed (namespace no longer labelled)');
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
    this.#states.delete(namespace);
  }

  /** The gauge of labelled namespaces refusing the controller, as of now (set on every change). */
  #countForbidden(): void {
    const wanted = this.#deps.namespaces.namespaces();
    const forbidden = [...this.#states].filter(
      ([namespace, state]) => state.forbidden && wanted.has(namespace),
    );
    this.#metrics.mirrorsForbidden.set(forbidden.length);
  }

  #stateOf(namespace: string): MirrorState {
    let state = this.#states.get(namespace);
    if (!state) {
      state = {
        ours: undefined,
        foreign: false,
        forbidden: false,
        content: undefined,
        attemptedAt: -Infinity,
      };
      this.#states.set(namespace, state);
    }
    return state;
  }

  /** A write request: fence, timeout, counted as a mirror write. */
  async #write<T>(request: (signal: AbortSignal) => Promise<T>): Promise<T> {
    this.#fence();
    const { clock } = this.#deps;
    const value = await timedWrite(this.#metrics, clock, 'mirror', () =>
      withRequestTimeout(clock, this.#config.requestTimeoutMs, this.#signal, request),
    );
    return value;
  }

  /** A read: fence, timeout. */
  async #request<T>(request: (signal: AbortSignal) => Promise<T>): Promise<T> {
    this.#fence();
    return await withRequestTimeout(this.#deps.clock, this.#config.requestTimeoutMs, this.#signal, request);
  }

  #fence(): void {
    const lead = this.#deps.leadership();
    if (!lead.leading || lead.term !== this.#options.term) {
      this.#log.info({ leading: lead.leading }, 'not leading in this term: mirrors stop');
      throw new NotLeading();
    }
  }

  #key(namespace: string): ConfigMapKey {
    return { namespace, name: this.#name };
  }
}

/** Ours: carries the controller's managed-by label. */
function isOurs(stored: StoredConfigMap): boolean {
  return stored.labels[MANAGED_BY_LABEL] === STATUS_LABELS[MANAGED_BY_LABEL];
}

/** Thrown by the fence inside a step; ends the runnable. */
class NotLeading extends Error {
  constructor() {
    super('not leading');
  }
}
