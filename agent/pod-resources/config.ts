/** The agent's `podResources` section: reading the kubelet's PodResources API (docs/pod-resources.md). */
import { z } from 'zod';

/** Where the kubelet serves PodResources on every node. */
export const DEFAULT_POD_RESOURCES_SOCKET = '/var/lib/kubelet/pod-resources/kubelet.sock';

export const podResourcesConfigSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .default(true)
      .describe('report the pods holding each device (a simulated node never reads the socket)'),
    socket: z
      .string()
      .min(1)
      .default(DEFAULT_POD_RESOURCES_SOCKET)
      .describe('the kubelet’s PodResources socket'),
    periodMs: z.number().int().min(500).max(600_000).default(5000).describe('time between reads'),
    timeoutMs: z.number().int().min(50).max(60_000).default(2000).describe('one read may take this long'),
    maxMessageBytes: z
      .number()
      .int()
      .min(1024)
      .max(64 * 1024 * 1024)
      .default(16 * 1024 * 1024)
      .describe('the largest answer read (the kubelet’s own bound is 16 MiB)'),
  })
  .prefault({})
  .superRefine((config, ctx) => {
    if (config.timeoutMs >= config.periodMs)
      ctx.addIssue({ code: 'custom', path: ['timeoutMs'], message: 'must be less than periodMs' });
  });

/** The section after defaults. */
export type PodResourcesConfig = z.output<typeof podResourcesConfigSchema>;
