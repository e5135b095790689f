/**
 * Self-healing's marks on a Node, read by the controller's next leader, by `npu-fault
 * remediation status` and by people (kubectl):
 *
 * - `npu-fault.io/remediation`: the record (compact JSON) on each Node the controller cordoned:
 *   ownership (only nodes carrying it are ever uncordoned or drained), the phase, and the times
 *   the next step depends on (drain delay, recovery hold, cooldown);
 * - `npu-fault.io/maintenance`: set by a person, suspends self-healing on the node;
 * - the taint `npu-fault.io/unhealthy:NoSchedule`, added with the cordon.
 *
 * The record is a boundary (anyone with patch rights on Nodes may write it), so reads validate
 * and fail with one line naming the annotation and the field.
 */
import { z } from 'zod';
import { decodeJson, type Decoded } from './decoded.js';

/** The annotation holding self-healing's record of a node it cordoned. */
export const REMEDIATION_ANNOTATION = 'npu-fault.io/remediation';
/** The annotation that suspends self-healing on a node (planned work). */
export const MAINTENANCE_ANNOTATION = 'npu-fault.io/maintenance';
/** The taint added with the cordon (effect NoSchedule). */
export const UNHEALTHY_TAINT_KEY = 'npu-fault.io/unhealthy';

const isoTime = z.iso.datetime({ offset: true });

/**
 * Where a node this controller owns stands:
 * - `cordoned`: unschedulable (and tainted) by us; in mode drain, waiting for the drain delay;
 * - `draining`: pods being evicted (a new leader resumes it);
 * - `drained`: every pod that had to go is gone;
 * - `blocked`: the last drain timed out (blocking pods listed); retried later;
 * - `overridden`: a person uncordoned it: left alone until it recovers;
 * - `released`: uncordoned by us after recovery, or recovered after an override; kept for
 *   the cooldown, then the annotation is removed.
 */
export const REMEDIATION_PHASES = [
  'cordoned',
  'draining',
  'drained',
  'blocked',
  'overridden',
  'released',
] as const;
export type RemediationPhase = (typeof REMEDIATION_PHASES)[number];

/** The `npu-fault.io/remediation` record. */
export const nodeRecordSchema = z.strictObject({
  phase: z.enum(REMEDIATION_PHASES),
  /** The replica and term that cordoned it. */
  by: z.string().min(1).max(253),
  term: z.number().int().nonnegative(),
  /** When it was cordoned. */
  since: isoTime,
  /** Why, in one line (`npu3: pcie-link-down`). */
  reason: z.string().max(1024),
  /** The failed devices' resource ids when it was cordoned (per-device eviction). */
  devices: z.array(z.string().min(1).max(256)).max(256),
  /** Whether we added the taint (so only ours is removed). */
  tainted: z.boolean(),
  drainStartedAt: isoTime.nullable(),
  drainFinishedAt: isoTime.nullable(),
  /** Pods that blocked the last drain (`namespace/name: why`), at most 20. */
  blocking: z.array(z.string().max(512)).max(20),
  /** When its devices were first seen healthy again (the uncordon hold runs from here). */
  recoveredAt: isoTime.nullable(),
  /** When it was released or overridden (the cooldown runs from here). */
  releasedAt: isoTime.nullable(),
});
export type NodeRecord = z.infer<typeof nodeRecordSchema>;

/** Reads `npu-fault.io/remediation`. */
export function decodeNodeRecord(text: string): Decoded<NodeRecord> {
  return decodeJson(nodeRecordSchema, text, REMEDIATION_ANNOTATION);
}

/** The annotation value of a record. */
export function encodeNodeRecord(record: NodeRecord): string {
  return JSON.stringify(nodeRecordSchema.parse(record));
}
