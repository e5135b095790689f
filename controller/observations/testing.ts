/**
 * Test helpers for the observation endpoint (this folder's tests, the integration tests,
 * and the ingest function's tests later): snapshot builders and a real server on an
 * ephemeral loopback port.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { z } from 'zod';
import type { SnapshotInput, gpuSchema } from '../../contracts/index.js';
import type { RequestHandler } from '../../platform/index.js';
import { OBSERVATIONS_PATH } from '../../contracts/index.js';

/** What a GPU snapshot is made of; defaults give a healthy two-GPU node. */
export interface GpuSnapshotOptions {
  node?: string;
  seq?: number;
  bootId?: string;
  /** ISO time (default 2026-01-01T00:00:00Z plus `seq` seconds). */
  collectedAt?: string;
  /** XIDs reported by GPU 0 (79, fallen off the bus, fails it at once). */
  xids?: number[];
}

/** A valid hdc.health/v1 snapshot of an NVIDIA node, as an agent would send it. */
export function gpuSnapshot(options: GpuSnapshotOptions = {}): SnapshotInput {
  const seq = options.seq ?? 1;
  const collectedAt = options.collectedAt ?? new Date(Date.UTC(2026, 0, 1) + seq * 1000).toISOString();
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

/** The request body carrying `snapshots`. */
export function observationsBody(...snapshots: unknown[]): { observations: { snapshot: unknown }[] } {
  return { observations: snapshots.map((snapshot) => ({ snapshot })) };
}

/** A handler served on 127.0.0.1 at an ephemeral port. */
export interface TestServer {
  /** `http://127.0.0.1:<port>` */
  readonly origin: string;
  /** `origin` + OBSERVATIONS_PATH */
  readonly url: string;
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
    url: `${origin}${OBSERVATIONS_PATH}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A response read whole: status, headers and the body parsed as JSON (text when it is not). */
export interface TestResponse {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

/** POSTs `body` (an object is sent as JSON) with a bearer token unless `token` is null. */
export async function postObservations(
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
