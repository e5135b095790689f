/**
 * Test helpers for this folder's tests and other folders' (the door lets a test import a
 * folder's testing.ts): the in-memory ConfigMap store, a small valid document, a logger
 * that keeps its lines.
 */
import type { PublishedDocument } from '../../contracts/index.js';
import { createLogger, type Logger } from '../../platform/index.js';

export { FakeConfigMapClient, type ConfigMapCall, type ConfigMapOperation } from './fake-configmap-client.js';

/** A logger that keeps its lines, parsed. */
export function memoryLog(): { log: Logger; messages: () => Record<string, unknown>[] } {
  const lines: string[] = [];
  const log = createLogger({ level: 'debug', destination: { write: (l: string) => void lines.push(l) } });
  return { log, messages: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

/** A small valid document of `identity` in `term`; `marker` (its node_count) makes its content distinct. */
export function sampleDocument(
  identity: string,
  term: number,
  marker = 0,
  timestamp = '2026-01-01T00:00:00.000Z',
): PublishedDocument {
  return {
    version: '3.0',
    timestamp,
    publisher: { identity, term },
    node_count: marker,
    cluster_summary: { total: 0, healthy: 0, degraded: 0, failed: 0, unknown: 0 },
    unobserved: [],
    nodes: {},
  };
}
