/**
 * Test helpers for other folders' tests (the door lets a test import a folder's testing.ts):
 * the in-memory DeviceTaintClient, and a node's published entry with failed devices.
 */
import type { PublishedNode } from '../../../contracts/index.js';
export { FakeDeviceTaintClient } from './fake-client.js';

/** A node's published entry listing `devices` (GPUs `gpu0`, `gpu1`, …; failed unless said) among 8. */
export function nodeEntryWith(
  node: string,
  devices: { key: string; resource_id: string; status?: 'failed' | 'degraded' }[],
): PublishedNode {
  return {
    node,
    observed_at: '2026-12-01T10:00:00.000Z',
    agent: 'ok',
    summary: { total: 8, healthy: 8 - devices.length, degraded: 0, failed: devices.length, unknown: 0 },
    npus: devices.map((d, i) => ({
      id: `gpu${i}`,
      key: d.key,
      resource_id: d.resource_id,
      kind: 'gpu',
      model: 'H200',
      status: d.status ?? 'failed',
      since: '2026-12-01T10:00:00.000Z',
      reason: 'xid-79',
      reasons: ['xid-79'],
      signals: [],
      temperature_c: null,
      power_w: null,
      ecc_errors: null,
      pcie_link_status: null,
    })),
  };
}
