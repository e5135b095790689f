/**
 * API watchers of the status ConfigMap, as consumers in many namespaces would hold them: one
 * primary that reads every document (fault detection, the lossless check) and any number of
 * others that only note when each version reached them (the fan-out delay and the
 * apiserver's watch egress). Each is its own watch stream, so the apiserver does the work it
 * would do for that many pods.
 */
import type * as k8s from '@kubernetes/client-node';
import { FAULT_DATA_KEY, type PublishedDocument } from '../../contracts/index.js';
import { watchStatusConfigMap } from '../../stack/index.js';
import { summarise } from './summary.js';
import { watchStatusVersions } from './version-watch.js';
import type { PathSummary } from './result.js';

/** One document version as the primary watcher received it. */
export interface Arrival {
  resourceVersion: string;
  at: number;
  bytes: number;
  document: PublishedDocument;
}

/** The watchers of one run. */
export class StatusWatchers {
  readonly #kc: k8s.KubeConfig;
  readonly #namespace: string;
  readonly #others: { stop(): void }[] = [];
  /** resourceVersion → arrival time at each watcher (index 0: the primary). */
  readonly #arrivals = new Map<string, number[]>();
  /** resourceVersion → the document's size, from the primary. */
  readonly #sizes = new Map<string, number>();
  #primary?: { stop(): void };
  #fanout: number[] = [];
  #delivered = 0;

  constructor(kc: k8s.KubeConfig, namespace: string) {
    this.#kc = kc;
    this.#namespace = namespace;
  }

  /** Starts the primary watcher; `onDocument` gets every version. */
  startPrimary(onDocument: (arrival: Arrival) => void): void {
    this.#primary = watchStatusConfigMap(this.#kc, this.#namespace, (object, at) => {
      const text = object.data?.[FAULT_DATA_KEY];
      const resourceVersion = object.metadata?.resourceVersion ?? '';
      this.#note(resourceVersion, at);
      if (text === undefined) return;
      this.#sizes.set(resourceVersion, Buffer.byteLength(text));
      onDocument({
        resourceVersion,
        at,
        bytes: Buffer.byteLength(text),
        document: JSON.parse(text) as PublishedDocument,
      });
    });
  }

  /** Total watchers, primary included. */
  count(): number {
    return this.#others.length + (this.#primary ? 1 : 0);
  }

  /** Adds or removes plain watchers until `total` watch (the primary counts as one). */
  resize(total: number): void {
    while (this.count() < total)
      this.#others.push(
        watchStatusVersions(this.#kc, this.#namespace, (resourceVersion, at) =>
          this.#note(resourceVersion, at),
        ),
      );
    while (this.count() > Math.max(total, 1)) this.#others.pop()?.stop();
  }

  /**
   * The fan-out delays since the last call: per version every watcher saw, each other
   * watcher's arrival after the first one's. Versions still arriving (newer than `before`) wait.
   * `deliveredBytes`: the status documents the watchers received in that time (each version's
   * fault.json size times the watchers it reached; the watch events' framing not counted).
   */
  takeFanout(before: number): PathSummary & { samples: number[]; deliveredBytes: number } {
    const watchers = this.count();
    for (const [version, times] of this.#arrivals) {
      const first = Math.min(...times);
      if (times.length < watchers && first > before) continue;
      for (const t of times) if (t !== first) this.#fanout.push(t - first);
      this.#delivered += times.length * (this.#sizes.get(version) ?? 0);
      this.#arrivals.delete(version);
      this.#sizes.delete(version);
    }
    const samples = this.#fanout;
    const deliveredBytes = this.#delivered;
    this.#fanout = [];
    this.#delivered = 0;
    return { ...summarise(samples), samples, deliveredBytes };
  }

  stop(): void {
    this.#primary?.stop();
    for (const w of this.#others.splice(0)) w.stop();
  }

  #note(resourceVersion: string, at: number): void {
    const times = this.#arrivals.get(resourceVersion);
    if (times) times.push(at);
    else this.#arrivals.set(resourceVersion, [at]);
  }
}
