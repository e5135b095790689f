import { describe, expect, it } from '@jest/globals';
import {
  PUBLISHED_VERSION,
  STATUS_CONFIGMAP_NAME,
  STATUS_NAMESPACE,
  publishedDocumentSchema,
} from './index.js';

/** The example document of CONTRACT §3, verbatim. */
const example = {
  version: '3.0',
  timestamp: '2026-11-29T08:23:46.010Z',
  publisher: { identity: 'npu-fault-controller-7c9d-2xk', term: 4 },
  node_count: 128,
  cluster_summary: { total: 1024, healthy: 1021, degraded: 1, failed: 1, unknown: 1 },
  unobserved: ['atlas900-node-117'],
  nodes: {
    'atlas900-node-042': {
      node: 'atlas900-node-042',
      observed_at: '2026-11-29T08:23:45.123Z',
      agent: 'ok',
      summary: { total: 8, healthy: 6, degraded: 1, failed: 1, unknown: 0 },
      npus: [
        {
          id: 'npu1',
          key: '0000:C2:00.0',
          resource_id: 'Ascend910-1',
          kind: 'npu',
          model: '910B3',
          status: 'degraded',
          since: '2026-11-29T08:22:40.000Z',
          reason: 'high-temp',
          reasons: ['high-temp'],
          signals: [],
          temperature_c: 89.2,
          power_w: 312.5,
          ecc_errors: 3,
          pcie_link_status: 'up',
        },
        {
          id: 'npu5',
          key: '0000:02:00.0',
          resource_id: 'Ascend910-5',
          kind: 'npu',
          model: '910B3',
          status: 'failed',
          since: '2026-11-29T08:23:45.123Z',
          reason: 'pcie-link-down',
          reasons: ['pcie-link-down'],
          signals: [],
          temperature_c: 61.0,
          power_w: 240.1,
          ecc_errors: 0,
          pcie_link_status: 'down',
        },
      ],
    },
  },
};

describe('published document contract (CONTRACT §3)', () => {
  it('names the ConfigMap and version', () => {
    expect([STATUS_NAMESPACE, STATUS_CONFIGMAP_NAME, PUBLISHED_VERSION]).toEqual([
      'ai-infra',
      'npu-fault-status-v3',
      '3.0',
    ]);
  });

  it('accepts the contract example, and the optional ingest_degraded and omitted_nodes', () => {
    expect(publishedDocumentSchema.parse(example)).toEqual(example);
    expect(
      publishedDocumentSchema.safeParse({
        ...example,
        ingest_degraded: { stale_nodes: 30 },
        omitted_nodes: 2,
      }).success,
    ).toBe(true);
  });

  it.each([
    ['another version', { ...example, version: '2.0' }, ['version']],
    [
      'a bad status',
      {
        ...example,
        nodes: { 'atlas900-node-042': { ...example.nodes['atlas900-node-042'], agent: 'dead' } },
      },
      ['nodes', 'atlas900-node-042', 'agent'],
    ],
    [
      'a node entry under another key',
      { ...example, nodes: { other: example.nodes['atlas900-node-042'] } },
      ['nodes', 'other', 'node'],
    ],
  ])('rejects %s', (_name, doc, path) => {
    const result = publishedDocumentSchema.safeParse(doc);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path).toEqual(path);
  });
});
