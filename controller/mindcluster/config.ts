/** The controller's `mindcluster` section (off by default; docs/mindcluster.md). */
import { z } from 'zod';

export const mindClusterConfigSchema = z.strictObject({
  enabled: z
    .boolean()
    .default(false)
    .describe("read MindCluster's device-info ConfigMaps (mindx-dl-deviceinfo-<node>) as observations"),
  namespace: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'must be a DNS label (a namespace name)')
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
});
