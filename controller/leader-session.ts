/**
 * What the leader does for one term, and only while the fence is up: publish the status
 * ConfigMap, keep its mirrors, write Node status, remediate, emit Events. Prepared when the
 * elector reports the term (app.ts's leader-only work, platform's createLeaderOnly), which
 * then runs its parts with the term's signal; everything stops when that signal aborts (lost
 * lease, renew deadline passed, shutdown) or when the publisher steps down on a 409 that
 * shows a newer term (then this replica stops acting at once, before its elector notices).
 *
 * Before its first write the session merges the published document into the engine (a
 * replica that becomes leader after a gap adopts the failures it missed: seed.ts), so it
 * never publishes a document that forgets a failure the previous leader published.
 */
import type { PublishedDocument } from '../contracts/index.js';
import { parseTimestamp, type Transition } from '../core/engine/index.js';
import { describeError, type Clock, type Logger, type Registry, type Runnable } from '../platform/index.js';
import type { EngineHost } from './engine-host.js';
import type { Leadership } from './leader-election/index.js';
import type { ControllerMetrics } from './metrics.js';
import type { EventRecorder, NodeStatusWriter } from './node-status/index.js';
import type { Remediator } from './remediation/index.js';
import {
  createStatusMirrors,
  createStatusPublisher,
  documentOf,
  type ConfigMapClient,
  type MirrorNamespaces,
  type MirrorsConfigInput,
  type PublisherConfigInput,
  type StatusPublisher,
  type WrittenStatus,
} from './publisher/index.js';

/** A change waiting for the write that will carry it (for the latency histogram). */
interface Pending {
  at: number;
  emitted: number;
  failed: boolean;
}

/** The most changes waiting for a write (a bound on memory if writes stall). */
const MAX_PENDING = 100_000;

/** What a session is built from. */
export interface LeaderSessionDeps {
  host: EngineHost;
  client: ConfigMapClient;
  clock: Clock;
  log: Logger;
  registry: Registry;
  metrics: ControllerMetrics;
  events: EventRecorder;
  nodeStatus: (leadership: () => Leadership) => NodeStatusWriter;
  /** Self-healing for the term (always built: its settings, hot-reloaded, may turn it on). */
  remediator?: (leadership: () => Leadership, term: number) => Remediator;
  mirrorNamespaces: MirrorNamespaces | undefined;
  elector: { identity: string; leadership(): Leadership; resign(reason: string): void };
  /** Nodes whose applied clear annotation waits for a document written after it. */
  pendingClears(): Iterable<string>;
  /** When the clear on `node` was applied (clock ms), if one was. */
  clearedAt(node: string): number | undefined;
}

/** Settings of a session. */
export interface LeaderSessionOptions {
  namespace: string;
  statusName: string;
  publish: PublisherConfigInput;
  mirrors: MirrorsConfigInput;
}

/** The running session of one term. */
export class LeaderSession {
  readonly term: number;
  readonly #deps: LeaderSessionDeps;
  readonly #options: LeaderSessionOptions;
  readonly #abort = new AbortController();
  #unlink: (() => void) | undefined;
  #steppedDown = false;
  #pending: Pending[] = [];
  #publisher: StatusPublisher | undefined;
  #nodeStatus: NodeStatusWriter | undefined;
  #remediator: Remediator | undefined;
  #lastDocument: PublishedDocument | undefined;
  #lastRenderedAt: number | undefined;

  constructor(term: number, deps: LeaderSessionDeps, options: LeaderSessionOptions) {
    this.term = term;
    this.#deps = deps;
    this.#options = options;
  }

  /** The fence for this term: the elector's, down once the publisher stepped down. */
  readonly leadership = (): Leadership => {
    if (this.#steppedDown || this.#abort.signal.aborted) return { leading: false };
    const lead = this.#deps.elector.leadership();
    return lead.leading && lead.term === this.term ? lead : { leading: false };
  };

  /** The document last written in this term. */
  lastDocument(): PublishedDocument | undefined {
    return this.#lastDocument;
  }

  /** When (clock ms) the last acknowledged document of this term was rendered. */
  lastRenderedAt(): number | undefined {
    return this.#lastRenderedAt;
  }

  /**
   * Readies the term: merges the published document, then builds the parts to run (the
   * publisher, Node status, mirrors, remediation), none when `signal` aborted meanwhile. They
   * run until `signal` aborts or the publisher steps down; call `end` once they all stopped.
   */
  async prepare(signal: AbortSignal): Promise<Runnable[]> {
    const { host, client, clock, log, registry } = this.#deps;
    if (signal.aborted) return [];
    const stop = (): void => this.#abort.abort(signal.reason);
    signal.addEventListener('abort', stop, { once: true });
    this.#unlink = () => signal.removeEventListener('abort', stop);
    const own = this.#abort.signal;
    await this.#mergePublished(own);
    if (own.aborted) return [];
    const publisher = createStatusPublisher(
      {
        client,
        clock,
        log,
        registry,
        render: (_now, info) => host.document(info),
        leadership: this.leadership,
        onWritten: (written) => this.#written(written, mirrors),
        onStepDown: (reason) => {
          this.#steppedDown = true;
          log.warn({ term: this.term, reason }, 'stepped down: a newer leader published');
          this.#abort.abort(new Error(`stepped down: ${reason}`));
          // Its lease may still renew (a recreated Lease): give it up, or nobody publishes.
          this.#deps.elector.resign(`stepped down: ${reason}`);
        },
      },
      {
        identity: this.#deps.elector.identity,
        term: this.term,
        namespace: this.#options.namespace,
        config: { ...this.#options.publish, name: this.#options.statusName },
      },
    );
    const mirrors = this.#deps.mirrorNamespaces
      ? createStatusMirrors(
          {
            client,
            namespaces: this.#deps.mirrorNamespaces,
            leadership: this.leadership,
            clock,
            log,
            registry,
          },
          {
            term: this.term,
            statusNamespace: this.#options.namespace,
            name: this.#options.statusName,
            config: this.#options.mirrors,
          },
        )
      : undefined;
    this.#publisher = publisher;
    this.#nodeStatus = this.#deps.nodeStatus(this.leadership);
    this.#remediator = this.#deps.remediator?.(this.leadership, this.term);
    // The parts stop on the session's own signal: it also aborts on a step-down.
    const parts: Runnable[] = [
      publisher,
      this.#nodeStatus,
      ...(mirrors ? [mirrors] : []),
      ...(this.#remediator ? [this.#remediator] : []),
    ];
    return parts.map((part) => ({ name: part.name, start: () => part.start(own) }));
  }

  /** The term is over and its parts stopped: nothing of it acts any more. */
  end(): void {
    this.#unlink?.();
    this.#abort.abort(new Error('session over'));
    this.#publisher = undefined;
    this.#nodeStatus = undefined;
    this.#remediator = undefined;
  }

  /** Transitions of the engine while this session runs. */
  onTransitions(transitions: readonly Transition[], actOn: boolean): void {
    if (!this.leadership().leading) return;
    const now = this.#deps.clock.now();
    let failed = false;
    let remediate = false;
    for (const t of transitions) {
      if (t.to === 'failed' || t.from === 'failed' || t.to === 'degraded' || t.from === 'degraded')
        remediate = true;
      if (this.#pending.length < MAX_PENDING)
        this.#pending.push({ at: parseTimestamp(t.at), emitted: now, failed: t.to === 'failed' });
      if (t.to === 'failed') failed = true;
      this.#nodeStatus?.markDirty(t.node);
      if (actOn) this.#event(t);
    }
    if (failed) this.#publisher?.requestEarlyWrite();
    if (remediate) this.#remediator?.wake();
  }

  /** A Node needs its status written (the Node watch saw a change). */
  markDirty(node: string): void {
    this.#nodeStatus?.markDirty(node);
  }

  /** Something self-healing decides from changed (a Node, the settings): decide again now. */
  wakeRemediation(): void {
    this.#remediator?.wake();
  }

  /** The term's remediator (tests). */
  remediator(): Remediator | undefined {
    return this.#remediator;
  }

  #written(written: WrittenStatus, mirrors: { publish(source: WrittenStatus): void } | undefined): void {
    this.#lastDocument = written.document;
    this.#lastRenderedAt = written.renderedAt;
    // A clear applied before this render is now published: its annotation may go.
    for (const node of this.#deps.pendingClears()) this.#nodeStatus?.markDirty(node);
    const carried: { seconds: number; failed: boolean }[] = [];
    const waiting: Pending[] = [];
    for (const p of this.#pending) {
      if (p.emitted <= written.renderedAt)
        carried.push({ seconds: (written.acknowledgedAt - p.at) / 1000, failed: p.failed });
      else waiting.push(p);
    }
    this.#pending = waiting;
    this.#deps.metrics.published(carried);
    mirrors?.publish(written);
  }

  /** One Event per change worth a person's attention (not the first unknown → healthy). */
  #event(t: Transition): void {
    if (t.from === 'unknown' && t.to === 'healthy') return;
    const node = { apiVersion: 'v1', kind: 'Node', name: t.node, uid: t.node };
    const why = t.reason ? `: ${t.reason}` : '';
    switch (t.to) {
      case 'failed':
        this.#deps.events.record(node, 'Warning', 'DeviceFailed', `${t.npu} failed${why}`);
        break;
      case 'degraded':
        this.#deps.events.record(node, 'Warning', 'DeviceDegraded', `${t.npu} degraded${why}`);
        break;
      case 'unknown':
        this.#deps.events.record(node, 'Warning', 'DeviceUnknown', `${t.npu} unknown${why}`);
        break;
      case 'healthy':
        this.#deps.events.record(node, 'Normal', 'DeviceRecovered', `${t.npu} healthy again (was ${t.from})`);
        break;
    }
  }

  /** Reads the published document and merges it into the engine (newest evidence wins). */
  async #mergePublished(signal: AbortSignal): Promise<void> {
    const { client, host, log } = this.#deps;
    try {
      const stored = await client.get(
        { namespace: this.#options.namespace, name: this.#options.statusName },
        signal,
      );
      const document = documentOf(stored?.data);
      if (stored && !document) log.warn('the status ConfigMap holds no valid document: nothing to merge');
      if (!document) return;
      // An operator's clear applied after this document was written is newer evidence than
      // the document: those nodes are not merged (their failures would come back).
      const writtenAt = parseTimestamp(document.timestamp);
      const entries = Object.values(document.nodes).filter(
        (entry) => !((this.#deps.clearedAt(entry.node) ?? Number.NEGATIVE_INFINITY) >= writtenAt),
      );
      const changes = host.seed(entries.map((entry) => ({ node: entry.node, entry })));
      log.info(
        { term: this.term, from: document.publisher, adopted: changes.length },
        'merged the published document before publishing',
      );
    } catch (error) {
      if (signal.aborted) return;
      // Without the document this replica's own engine is all it has: publishing it is
      // still right for a hot standby (it saw the stream), so go on, but say so.
      log.warn({ err: describeError(error) }, 'could not read the published document before publishing');
    }
  }
}
