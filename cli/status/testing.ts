/** Test support for cli/status/: published documents built in a line, and a fleet that shows every status. */
import type { PublishedDevice, PublishedDocument, PublishedNode } from '../../contracts/index.js';
import { DEFAULT_STALE_AFTER_MS } from './args.js';

export const NOW = Date.parse('2026-12-01T10:00:10.000Z');
export const WRITTEN = '2026-12-01T10:00:08.800Z'; // 1.2 s before NOW

export function device(
  id: string,
  status: PublishedDevice['status'],
  extra: Partial<PublishedDevice> = {},
): PublishedDevice {
  const reason = status === 'healthy' ? null : status === 'failed' ? 'pcie-link-down' : 'high-temp';
  return {
    id,
    key: `0000:${id}`,
    resource_id: `Ascend910-${id}`,
    kind: 'npu',
    model: '910B2',
    status,
    since: '2026-12-01T10:00:00.000Z',
    reason,
    reasons: reason ? [reason] : ['ecc-error'],
    signals: reason ? [] : ['ecc-error'],
    temperature_c: 88.5,
    power_w: 300.5,
    ecc_errors: 2,
    pcie_link_status: status === 'failed' ? 'down' : 'up',
    ...extra,
  };
}

export function node(
  name: string,
  npus: PublishedDevice[],
  agent: PublishedNode['agent'] = 'ok',
): PublishedNode {
  const count = (s: PublishedDevice['status']): number => npus.filter((d) => d.status === s).length;
  const unlistedHealthy = 8 - npus.length;
  return {
    node: name,
    observed_at: '2026-12-01T10:00:09.000Z',
    agent,
    summary: {
      total: 8,
      healthy: count('healthy') + unlistedHealthy,
      degraded: count('degraded'),
      failed: count('failed'),
      unknown: count('unknown'),
    },
    npus,
  };
}

export function documentOf(
  nodes: PublishedNode[],
  extra: Partial<PublishedDocument> = {},
): PublishedDocument {
  return {
    version: '3.0',
    timestamp: WRITTEN,
    publisher: { identity: 'npu-fault-controller-7d9f-abc', term: 4 },
    node_count: 120,
    cluster_summary: { total: 960, healthy: 955, degraded: 2, failed: 2, unknown: 1 },
    unobserved: ['node-99'],
    nodes: Object.fromEntries(nodes.map((n) => [n.node, n])),
    ...extra,
  };
}

/** node-10 failed, node-2 failed, node-3 degraded, node-1 unknown, node-4 healthy with a signal. */
export const FLEET = documentOf([
  node('node-3', [device('npu1', 'degraded')]),
  node('node-10', [device('npu2', 'degraded'), device('npu10', 'failed'), device('npu1', 'failed')]),
  node('node-4', [device('npu6', 'healthy')]),
  node('node-1', [device('npu0', 'unknown', { reason: 'agent-unreachable' })], 'stale'),
  node('node-2', [device('npu3', 'failed')]),
]);

/** Render options: a table, no colour, at NOW. */
export const plain = {
  output: 'table',
  node: undefined,
  now: NOW,
  color: false,
  staleAfterMs: DEFAULT_STALE_AFTER_MS,
} as const;
