/**
 * Self-healing settings (`remediation` in the controller's configuration, and hot-reloaded
 * from the ConfigMap `<namespace>/npu-fault-remediation`, key `remediation.yaml`, which
 * replaces them whole while it is present and valid). Off by default.
 */
import { z } from 'zod';
import { parseConfigSection } from '../../platform/index.js';

const seconds = z.number().nonnegative();
const positiveSeconds = z.number().positive();

/** When a node counts as failed for remediation. */
export const triggerConfigSchema = z.strictObject({
  minDevices: z
    .number()
    .int()
    .positive()
    .default(1)
    .describe('a node is remediated when at least this many of its devices match'),
  statuses: z
    .array(z.enum(['failed', 'degraded']))
    .min(1)
    .default(['failed'])
    .describe('device statuses that match (failed, degraded)'),
  reasons: z
    .array(z.string().min(1).max(64))
    .default([])
    .describe('if not empty, a device matches only when one of these reasons is active'),
});

/** The circuit breaker: stops new cordons and drains in a fault storm. */
export const breakerConfigSchema = z.strictObject({
  maxUnhealthyPercent: z
    .number()
    .min(0)
    .max(100)
    .default(10)
    .describe(
      'open when more than this percentage of accelerator nodes are failed or cordoned (at least one node is always allowed)',
    ),
  maxUnhealthyNodes: z
    .number()
    .int()
    .positive()
    .optional()
    .describe(
      'open when more than this many accelerator nodes are failed or cordoned (overrides the percentage)',
    ),
  windowSeconds: positiveSeconds
    .default(600)
    .describe('a node released (uncordoned) within this window still counts as unhealthy'),
  autoResetSeconds: positiveSeconds
    .optional()
    .describe(
      'close by itself this long after opening, once the count is back under the limit (unset: only `npu-fault remediation reset` closes it)',
    ),
});

/** Uncordon on recovery. */
export const uncordonConfigSchema = z.strictObject({
  enabled: z.boolean().default(false).describe('uncordon nodes it cordoned once their devices recover'),
  holdSeconds: seconds.default(300).describe('how long a node must stay healthy before it is uncordoned'),
});

/**
 * The operators' 85 °C practice as a preset: a node is also remediated (cordoned, and in mode
 * drain evicted) when one of its devices stays hot. "Hot" is the rules' `high-temp` reason
 * (`high_temp.threshold_c`, 85 °C, in 3 of 5 samples), so what is published and what is acted
 * on agree; the hold is timed by the leading controller (thermal.ts).
 */
export const thermalEvictionConfigSchema = z.strictObject({
  enabled: z
    .boolean()
    .default(false)
    .describe(
      "also remediate a node when one of its devices has had high-temp (the rules' high_temp.threshold_c) active without a break for forSeconds",
    ),
  forSeconds: seconds
    .max(3600)
    .default(120)
    .describe(
      'how long a device must stay hot before its node is remediated (with the default rules a device hot for about 240 s fails, which the default trigger acts on anyway)',
    ),
});

/** Drain settings (mode drain). */
export const drainConfigSchema = z
  .strictObject({
    delaySeconds: seconds
      .default(0)
      .describe('wait this long after the cordon before evicting (time for training jobs to checkpoint)'),
    podTimeoutSeconds: positiveSeconds
      .default(120)
      .describe('how long one evicted pod may take to go (its grace period included)'),
    timeoutSeconds: positiveSeconds
      .default(600)
      .describe('a drain that takes longer reports its blocking pods (Event, metric) and is retried later'),
    forceDeleteAfterSeconds: positiveSeconds
      .optional()
      .describe(
        'delete a pod whose eviction is still refused after this long (unset: never force; needs the RBAC of k8s/controller/force-delete)',
      ),
    perDevice: z
      .boolean()
      .default(false)
      .describe(
        'evict only pods asking for an accelerator that the kubelet (PodResources, through the agent) names as holding a failed device; where the agent cannot tell, those whose allocation annotation names a failed device or none (pods asking for no accelerator stay)',
      ),
    allocationAnnotations: z
      .array(z.string().min(1).max(253))
      // The Ascend device plugin writes huawei.com/AscendReal (the devices it mounted); Volcano's
      // Ascend plugin the resource-named ones (allocation.ts cites the sources).
      .default([
        'huawei.com/AscendReal',
        'huawei.com/Ascend910',
        'huawei.com/Ascend310P',
        'huawei.com/Ascend310',
      ])
      .describe('pod annotations that list the devices allocated to a pod (comma-separated device names)'),
  })
  .superRefine((drain, context) => {
    // Each drain run gives up at timeoutSeconds: a force delay at or past it would never fire.
    if (drain.forceDeleteAfterSeconds !== undefined && drain.forceDeleteAfterSeconds >= drain.timeoutSeconds)
      context.addIssue({
        code: 'custom',
        path: ['forceDeleteAfterSeconds'],
        message: `must be less than timeoutSeconds (${drain.timeoutSeconds})`,
      });
  });

/**
 * Kubernetes device taints (DRA): a device matching the trigger, on a node whose devices are
 * published in ResourceSlices, gets a DeviceTaintRule selecting exactly it; recovery removes
 * it (device-taints/). Needs the RBAC of k8s/controller/device-taints.
 */
export const deviceTaintsConfigSchema = z.strictObject({
  enabled: z
    .boolean()
    .default(false)
    .describe(
      'taint each failed device in its DRA ResourceSlice with a DeviceTaintRule (Kubernetes 1.36+; needs the RBAC of k8s/controller/device-taints)',
    ),
  effect: z
    .enum(['NoSchedule', 'NoExecute'])
    .default('NoSchedule')
    .describe(
      'NoSchedule (no new claims get the device) or NoExecute (pods using it are evicted too; only with mode drain)',
    ),
  taintKey: z
    .string()
    // Length first (abort): a long value never reaches the pattern.
    .max(316, { abort: true })
    .regex(
      // A label name, written so that no two ways match the same text (linear time).
      /^([a-z0-9]+(-+[a-z0-9]+)*(\.[a-z0-9]+(-+[a-z0-9]+)*)*\/)?[A-Za-z0-9]+([-_.]+[A-Za-z0-9]+)*$/,
      'must be a label name (prefix/name)',
    )
    .refine(
      (key) => (key.split('/').at(-1) ?? '').length <= 63,
      'its name after / must be at most 63 characters',
    )
    .default('npu-fault.io/device-failed')
    .describe('the key of the device taint'),
});

/** The `remediation` section's fields, before the checks across them. */
const remediationFieldsSchema = z.strictObject({
  mode: z
    .enum(['off', 'cordon', 'drain'])
    .default('off')
    .describe('off, cordon (mark unschedulable, taint), or drain (cordon, then evict)'),
  dryRun: z.boolean().default(false).describe('decide and report (log, Events, metrics) but change nothing'),
  taint: z
    .boolean()
    .default(true)
    .describe('with the cordon, add the taint npu-fault.io/unhealthy:NoSchedule'),
  respectManualUncordon: z
    .boolean()
    .default(true)
    .describe('a node a person uncordoned is not cordoned again until it recovers and fails again'),
  optOutLabel: z
    .string()
    // Only npu-fault.io/ labels are cached from Nodes (a Node cache of every label would be large).
    .regex(
      /^npu-fault\.io\/[A-Za-z0-9._-]+(=[A-Za-z0-9._-]*)?$/,
      'must be a label under npu-fault.io/ (key or key=value)',
    )
    .default('npu-fault.io/remediation=disabled')
    .describe('nodes with this label (key=value) are never remediated'),
  nodeCooldownSeconds: seconds
    .default(600)
    .describe('after a node is released (uncordoned), how long before it may be cordoned again'),
  maxConcurrent: z.number().int().positive().default(1).describe('at most this many nodes draining at once'),
  intervalMs: z
    .number()
    .int()
    .min(50)
    .max(60_000)
    .default(2000)
    .describe('how often every node is re-evaluated (a failure is acted on at once)'),
  trigger: triggerConfigSchema.prefault({}),
  thermalEviction: thermalEvictionConfigSchema.prefault({}),
  breaker: breakerConfigSchema.prefault({}),
  uncordon: uncordonConfigSchema.prefault({}),
  drain: drainConfigSchema.prefault({}),
  deviceTaints: deviceTaintsConfigSchema.prefault({}),
});

/** The whole `remediation` section. */
export const remediationConfigSchema = remediationFieldsSchema.superRefine((remediation, context) => {
  // NoExecute evicts: only where evicting is what the operator chose.
  if (remediation.deviceTaints.effect === 'NoExecute' && remediation.mode !== 'drain')
    context.addIssue({
      code: 'custom',
      path: ['deviceTaints', 'effect'],
      message: `NoExecute evicts pods: needs mode drain (mode is ${remediation.mode})`,
    });
});

/** Remediation settings after defaults. */
export type RemediationConfig = z.output<typeof remediationConfigSchema>;
/** Remediation settings as written. */
export type RemediationConfigInput = z.input<typeof remediationConfigSchema>;

/** Parses a `remediation` section (one-line errors naming the field). */
export function parseRemediationConfig(input: unknown = {}): RemediationConfig {
  return parseConfigSection(remediationConfigSchema, input, 'remediation');
}
