/** The controller's `mindcluster` section (off by default; docs/mindcluster.md). */
import { z } from 'zod';
import { NODE_INFO_NAMESPACE } from './node-info.js';

const namespaceName = z
  .string()
  .regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'must be a DNS label (a namespace name)');

export const mindClusterConfigSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .default(false)
      .describe("read MindCluster's device-info ConfigMaps (mindx-dl-deviceinfo-<node>) as observations"),
    namespace: namespaceName
      .default('kube-system')
      .describe("namespace of MindCluster's device-info ConfigMaps"),
    periodMs: z
      .number()
      .int()
      .min(100)
      .max(10_000)
      .default(1000)
      .describe('how often an agentless node gets a snapshot from its MindCluster view (ms)'),
    maxNodes: z
      .number()
      .int()
      .min(1)
      .max(1_000_000)
      .default(10_000)
      .describe('at most this many device-info ConfigMaps held; a new one beyond is refused (reason limit)'),
    maxSilenceSeconds: z
      .number()
      .int()
      .min(10)
      .max(86_400)
      .default(900)
      .describe(
        "stop reporting a node whose ConfigMap was not written for this long (s; MindCluster's plugin rewrites it at least every 300 s)",
      ),
    nodeInfo: z
      .strictObject({
        enabled: z
          .boolean()
          .default(false)
          .describe(
            "also read MindCluster NodeD's node-info ConfigMaps (mindx-dl-nodeinfo-<node>): host hardware faults as node problems (needs mindcluster.enabled)",
          ),
        namespace: namespaceName
          .default(NODE_INFO_NAMESPACE)
          .describe("namespace of NodeD's node-info ConfigMaps"),
      })
      .prefault({}),
  })
  .refine((c) => !c.nodeInfo.enabled || c.enabled, {
    path: ['nodeInfo', 'enabled'],
    message: 'needs mindcluster.enabled: node-info is read by the MindCluster source',
  });
