/**
 * A simulated fleet for integration tests of the controller: 910B nodes whose snapshots a
 * Poster sends to every controller replica once a second as the ingest function does, and a
 * StatusFollower that keeps every version of the status ConfigMap a watch delivers.
 */
import * as k8s from '@kubernetes/client-node';
import type { DeviceHolderReading, PublishedDocument } from '../../contracts/index.js';
import { npuSnapshot, type NpuSpec } from '../../core/engine/testing.js';

const STATUS = 'npu-fault-status-v3';

/** One version of the status ConfigMap as a watcher saw it. */
export interface Seen {
  at: number;
  document: PublishedDocument;
}

/** Follows the status ConfigMap, keeping every version. */
export class StatusFollower {
  readonly seen: Seen[] = [];
  #waiters: { predicate: (doc: PublishedDocument) => boolean; resolve: (s: Seen) => void }[] = [];
  #abort: AbortController | undefined;
  #resume: string | undefined;

  constructor(
    readonly kc: k8s.KubeConfig,
    readonly namespace: string,
  ) {}

  start(): void {
    const watch = new k8s.Watch(this.kc);
    const query: Record<string, string> = { fieldSelector: `metadata.name=${STATUS}` };
    if (this.#resume) query.resourceVersion = this.#resume;
    void watch
      .watch(
        `/api/v1/namespaces/${this.namespace}/configmaps`,
        query,
        (type: string, object: k8s.V1ConfigMap) => {
          this.#resume = object.metadata?.resourceVersion ?? this.#resume;
          const json = object.data?.['fault.json'];
          if (type === 'DELETED' || json === undefined) return;
          const seen = { at: Date.now(), document: JSON.parse(json) as PublishedDocument };
          this.seen.push(seen);
          for (const waiter of [...this.#waiters]) {
            if (waiter.predicate(seen.document)) {
              this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
              waiter.resolve(seen);
            }
          }
        },
        () => {
          if (this.#abort) setTimeout(() => this.start(), 100).unref();
        },
      )
      .then((controller) => (this.#abort = controller));
  }

  stop(): void {
    const abort = this.#abort;
    this.#abort = undefined;
    abort?.abort();
  }

  /** The first version (already seen after `since`, or to come) matching `predicate`. */
  waitFor(
    predicate: (doc: PublishedDocument) => boolean,
    timeoutMs: number,
    what: string,
    since = 0,
  ): Promise<Seen> {
    const found = this.seen.find((s) => s.at >= since && predicate(s.document));
    if (found) return Promise.resolve(found);
    return new Promise<Seen>((resolve, reject) => {
      const waiter = {
        predicate,
        resolve: (s: Seen) => {
          clearTimeout(timer);
          resolve(s);
        },
      };
      const timer = setTimeout(() => {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        const last = this.seen.at(-1)?.document;
        reject(
          new Error(
            `timed out after ${timeoutMs} ms waiting for ${what}; last document: ${JSON.stringify(last)?.slice(0, 800)}`,
          ),
        );
      }, timeoutMs);
      this.#waiters.push(waiter);
    });
  }
}

/** Status of one device in a document (a node absent or a device not listed is healthy). */
export function statusIn(doc: PublishedDocument, node: string, npu: string): string {
  return doc.nodes[node]?.npus.find((d) => d.id === npu)?.status ?? 'healthy';
}

/** Simulated agents of 910B nodes (8 chips each); faults are set per device (`node/npuN`). */
export class Fleet {
  readonly faults = new Map<string, Partial<NpuSpec>>();
  /** Per node, the `device_holders` its snapshots carry (CONTRACT §1.9); none: left out. */
  readonly holders = new Map<string, DeviceHolderReading[]>();
  readonly #seq = new Map<string, number>();
  constructor(
    readonly nodes: string[],
    readonly boot: string,
  ) {}

  snapshots(): unknown[] {
    const collectedAt = new Date().toISOString();
    return this.nodes.map((node) => {
      const seq = (this.#seq.get(node) ?? 0) + 1;
      this.#seq.set(node, seq);
      const npus = Array.from({ length: 8 }, (_, npu) => ({ npu, ...this.faults.get(`${node}/npu${npu}`) }));
      const snapshot = npuSnapshot({ node, boot: this.boot, seq, t: 0, collectedAt }, npus);
      const holders = this.holders.get(node);
      return holders === undefined
        ? snapshot
        : { ...snapshot, payload: { ...snapshot.payload, device_holders: holders } };
    });
  }
}

/** Posts the fleet to every replica once a second, as the ingest function does. */
export class Poster {
  #timer: NodeJS.Timeout | undefined;
  readonly answers: { replica: string; status: number; body: unknown }[] = [];
  constructor(
    readonly fleet: Fleet,
    readonly token: string,
    readonly replicas: () => { identity: string; url: string }[],
  ) {}

  async postOnce(): Promise<void> {
    const body = JSON.stringify({ observations: this.fleet.snapshots().map((snapshot) => ({ snapshot })) });
    await Promise.allSettled(
      this.replicas().map(async ({ identity, url }) => {
        const response = await fetch(`${url}/v1/observations`, {
          method: 'POST',
          headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json' },
          body,
          signal: AbortSignal.timeout(2000),
        });
        this.answers.push({ replica: identity, status: response.status, body: await response.json() });
      }),
    );
  }

  start(): void {
    const tick = (): void => {
      void this.postOnce().finally(() => {
        if (this.#timer !== undefined) this.#timer = setTimeout(tick, 1000);
      });
    };
    this.#timer = setTimeout(tick, 0);
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
