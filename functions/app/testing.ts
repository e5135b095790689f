/**
 * Test helpers for the ingest endpoint (this folder's tests, the integration tests and the
 * lead's wiring tests): a fake Forwarder that records what it was given and answers as a
 * leader would, snapshot builders, CloudEvent request builders, and a real server on an
 * ephemeral loopback port.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { z } from 'zod';
import { SNAPSHOTS_PATH, SNAPSHOT_EVENT_TYPE } from '../../contracts/index.js';
import type { PublishedNode, Snapshot, SnapshotInput, gpuSchema } from '../../contracts/index.js';
import type { RequestHandler } from '../../platform/index.js';
import type { Forwarder, ForwardResult } from './app.js';

/** A Forwarder that answers as leader `leader` in `term`, recording every call. */
export interface FakeForwarder extends Forwarder {
  /** The snapshots of every call, in order. */
  readonly calls: Snapshot[][];
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
    leader: options.leader ?? 'controller-0',
    term: options.term ?? 1,
    entries: new Map(),
    failWith: undefined,
    answer: undefined,
    forward(snapshots) {
      fake.calls.push([...snapshots]);
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

/** What a GPU snapshot is made of; defaults give a healthy two-GPU node. */
export interface GpuSnapshotOptions {
  node?: string;
  seq?: number;
  bootId?: string;
  /** XIDs reported by GPU 0. */
  xids?: number[];
}

/** A valid hdc.health/v1 snapshot of an NVIDIA node, as an agent would send it. */
export function gpuSnapshot(options: GpuSnapshotOptions = {}): SnapshotInput {
  const seq = options.seq ?? 1;
  const collectedAt = new Date(Date.UTC(2026, 0, 1) + seq * 1000).toISOString();
  const gpu = (index: number, xids: number[]): z.input<typeof gpuSchema> => ({
    index,
    uuid: `GPU-0000-${index}`,
    bus_id: `0000:1${index}:00.0`,
    name: 'NVIDIA H100 80GB HBM3',
    temperature_gpu: 40,
    power_draw_w: 300,
    ecc_corrected_volatile: 0,
    ecc_uncorrected_volatile: 0,
    pcie_link_gen: 5,
    pcie_link_width: 16,
    xid_events: xids.map((xid) => ({ xid, at: collectedAt })),
  });
  return {
    schema: 'hdc.health/v1',
    node: options.node ?? 'gpu-node-1',
    boot_id: options.bootId ?? 'boot-1',
    seq,
    collected_at: collectedAt,
    collector: 'nvidia-smi',
    payload: { family: 'nvidia', gpus: [gpu(0, options.xids ?? []), gpu(1, [])] },
  };
}

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

/** A handler served on 127.0.0.1 at an ephemeral port. */
export interface TestServer {
  /** `http://127.0.0.1:<port>` */
  readonly origin: string;
  /** `origin` + SNAPSHOTS_PATH */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** Serves `handler` with node:http on a free loopback port. */
export async function serve(handler: RequestHandler): Promise<TestServer> {
  const server = createServer((req, res) => void handler(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0 }, resolve);
  });
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    url: `${origin}${SNAPSHOTS_PATH}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A response read whole: status, headers and the body parsed as JSON (undefined when it is not). */
export interface TestResponse {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

/**
 * POSTs `body` (an object is sent as JSON) as application/json, with a bearer token
 * (`good-token` by default) unless `token` is null.
 */
export async function postSnapshots(
  url: string,
  body: unknown,
  options: { token?: string | null; headers?: Record<string, string>; method?: string } = {},
): Promise<TestResponse> {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
  const token = options.token === undefined ? 'good-token' : options.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const payload = typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body);
  const method = options.method ?? 'POST';
  const withBody = method !== 'GET' && method !== 'HEAD';
  const response = await fetch(url, { method, headers, ...(withBody ? { body: payload } : {}) });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text) as unknown;
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}
