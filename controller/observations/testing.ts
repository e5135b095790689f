/**
 * Test helpers for the observation endpoint (this folder's tests, the integration tests,
 * and the ingest function's tests later): snapshot builders and a real server on an
 * ephemeral loopback port.
 */
import type { RequestHandler } from '../../platform/index.js';
import { OBSERVATIONS_PATH } from '../../contracts/index.js';
import { postJson, serve as serveOnLoopback, type TestServer } from '../../platform/testing.js';

export { gpuSnapshot, type GpuSnapshotOptions } from '../../contracts/testing.js';
export { type TestResponse, type TestServer } from '../../platform/testing.js';

/** The request body carrying `snapshots`. */
export function observationsBody(...snapshots: unknown[]): { observations: { snapshot: unknown }[] } {
  return { observations: snapshots.map((snapshot) => ({ snapshot })) };
}

/** Serves `handler` on a free loopback port; `url` is its observations endpoint. */
export function serve(handler: RequestHandler): Promise<TestServer> {
  return serveOnLoopback(handler, OBSERVATIONS_PATH);
}

/** POSTs `body` (an object is sent as JSON) with a bearer token (`good-token`) unless `token` is null. */
export const postObservations = postJson;
