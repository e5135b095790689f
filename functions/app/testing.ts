/**
 * Test helpers for the ingest endpoint (this folder's tests, the integration tests and the
 * lead's wiring tests): a fake Forwarder that records what it was given and answers as a
 * leader would, snapshot builders, CloudEvent request builders, and a real server on an
 * ephemeral loopback port.
 */
import { SNAPSHOTS_PATH, SNAPSHOT_EVENT_TYPE } from '../../contracts/index.js';
import type { PublishedNode, Snapshot } from '../../contracts/index.js';
import type { RequestHandler } from '../../platform/index.js';
import { postJson, serve as serveOnLoopback, type TestServer } from '../../platform/testing.js';
import type { Forwarder, ForwardResult } from './app.js';

/** What a forward() call is told besides the snapshots. */
export type ForwardOptions = NonNullable<Parameters<Forwarder['forward']>[1]>;

/** The observation items of a forward() call's `json`, as one UTF-8 text. */
export function forwardedText(options: ForwardOptions): string | undefined {
  const { json } = options;
  if (json === undefined || typeof json === 'string') return json;
  return (Buffer.isBuffer(json) ? json : Buffer.concat(json)).toString('utf8');
}

/** A Forwarder that answers as leader `leader` in `term`, recording every call. */
export interface FakeForwarder extends Forwarder {
  /** The snapshots of every call, in order. */
  readonly calls: Snapshot[][];
  /** The options of every call (`bytes`, the serialised `json`), in order. */
  readonly options: ForwardOptions[];
  leader: string;
  term: number;
  /** Each node's published entry as the fake leader answers it (absent: healthy, null). */
  readonly entries: Map<string, PublishedNode>;
  /** When set, every call rejects with it (a LeaderUnavailableError, say). */
  failWith: Error | undefined;
  /** When set, a call answers this instead of the computed result (to test a bad answer). */
  answer: ForwardResult | undefined;
}

/** A fake Forwarder: every snapshot accepted unless its `seq` was seen for its node (a duplicate). */
export function createFakeForwarder(options: { leader?: string; term?: number } = {}): FakeForwarder {
  const seen = new Map<string, number>();
  const fake: FakeForwarder = {
    calls: [],
    options: [],
    leader: options.leader ?? 'controller-0',
    term: options.term ?? 1,
    entries: new Map(),
    failWith: undefined,
    answer: undefined,
    forward(snapshots, options = {}) {
      fake.calls.push([...snapshots]);
      fake.options.push(options);
      if (fake.failWith) return Promise.reject(fake.failWith);
      if (fake.answer) return Promise.resolve(fake.answer);
      const results = snapshots.map((snapshot) => {
        const key = `${snapshot.node}/${snapshot.boot_id}`;
        const duplicate = (seen.get(key) ?? -1) >= snapshot.seq;
        if (!duplicate) seen.set(key, snapshot.seq);
        return {
          node: snapshot.node,
          accepted: !duplicate,
          ...(duplicate ? { dropped: 'duplicate' as const } : {}),
          entry: fake.entries.get(snapshot.node) ?? null,
        };
      });
      return Promise.resolve({ leader: fake.leader, term: fake.term, results });
    },
  };
  return fake;
}

export { gpuSnapshot, type GpuSnapshotOptions } from '../../contracts/testing.js';
export { type TestResponse, type TestServer } from '../../platform/testing.js';

/** The batch body carrying `snapshots`. */
export function batchBody(...snapshots: unknown[]): { snapshots: unknown[] } {
  return { snapshots };
}

/** Headers of a binary-mode CloudEvent (`ce-*`), its data being the request body. */
export function binaryEventHeaders(attributes: Record<string, string> = {}): Record<string, string> {
  return {
    'content-type': 'application/json',
    'ce-specversion': '1.0',
    'ce-id': 'event-1',
    'ce-source': '/npu-fault/agent/gpu-node-1',
    'ce-type': SNAPSHOT_EVENT_TYPE,
    ...Object.fromEntries(Object.entries(attributes).map(([name, value]) => [`ce-${name}`, value])),
  };
}

/** A structured-mode CloudEvent envelope carrying `data` (send as application/cloudevents+json). */
export function structuredEvent(
  data: unknown,
  attributes: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    specversion: '1.0',
    id: 'event-1',
    source: '/npu-fault/agent/gpu-node-1',
    type: SNAPSHOT_EVENT_TYPE,
    datacontenttype: 'application/json',
    data,
    ...attributes,
  };
}

/** Serves `handler` on a free loopback port; `url` is its snapshots endpoint. */
export function serve(handler: RequestHandler): Promise<TestServer> {
  return serveOnLoopback(handler, SNAPSHOTS_PATH);
}

/** POSTs `body` (an object is sent as JSON) with a bearer token (`good-token`) unless `token` is null. */
export const postSnapshots = postJson;
