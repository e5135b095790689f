/**
 * The Node condition `NPUHealthy` (pure): what the controller wants on a Node, from the
 * node's published entry. Written only when status, reason or message change, so the Node
 * object (watched by every kubelet-adjacent tool) is not rewritten every second.
 *
 * | node                                   | status  | reason            |
 * |----------------------------------------|---------|-------------------|
 * | a device failed (also under an overlay) | False   | DeviceFailed      |
 * | agent-unreachable / collector-error / node-not-ready | Unknown | AgentUnreachable, CollectorError, NodeNotReady |
 * | a device degraded                      | True    | DeviceDegraded    |
 * | otherwise                              | True    | AllDevicesHealthy |
 *
 * A failed device beats an overlay: it stays failed while its agent is silent, and the
 * condition must not soften to Unknown.
 */
import type { PublishedNode } from '../../contracts/index.js';

import { NPU_HEALTHY_CONDITION } from '../watch/index.js';

/** The condition type (the Node watch caches it under this name). */
export const NPU_HEALTHY = NPU_HEALTHY_CONDITION;

/** Longest message written (the API allows more; a Node is read by many watchers). */
export const MAX_MESSAGE = 1024;

/** The condition's content (times are added when it is written). */
export interface DesiredCondition {
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
}

const OVERLAY_REASONS: Record<string, string> = {
  'agent-unreachable': 'AgentUnreachable',
  'collector-error': 'CollectorError',
  'node-not-ready': 'NodeNotReady',
};

/** The condition for a node whose entry is `entry` (null: observed and not listed, so healthy). */
export function desiredCondition(entry: PublishedNode | null): DesiredCondition {
  if (entry === null) return { status: 'True', reason: 'AllDevicesHealthy', message: 'all devices healthy' };
  const failed = entry.npus.filter((d) => d.status === 'failed');
  if (failed.length > 0) {
    return {
      status: 'False',
      reason: 'DeviceFailed',
      message: bounded(
        `${failed.length} of ${entry.summary.total} devices failed: ${failed.map((d) => `${d.id} (${d.reason ?? 'unknown'})`).join(', ')}`,
      ),
    };
  }
  const overlay = entry.npus.find((d) => d.reason !== null && d.reason in OVERLAY_REASONS)?.reason;
  const nodeOverlay =
    overlay ??
    (entry.agent === 'stale'
      ? 'agent-unreachable'
      : entry.agent === 'collector-error'
        ? 'collector-error'
        : undefined);
  if (nodeOverlay !== undefined) {
    return {
      status: 'Unknown',
      reason: OVERLAY_REASONS[nodeOverlay] ?? 'Unknown',
      message: bounded(`device status unknown: ${nodeOverlay}`),
    };
  }
  const degraded = entry.npus.filter((d) => d.status === 'degraded');
  if (degraded.length > 0) {
    return {
      status: 'True',
      reason: 'DeviceDegraded',
      message: bounded(
        `${degraded.length} of ${entry.summary.total} devices degraded: ${degraded.map((d) => `${d.id} (${d.reason ?? 'unknown'})`).join(', ')}`,
      ),
    };
  }
  return { status: 'True', reason: 'AllDevicesHealthy', message: 'all devices healthy' };
}

/** True when a written condition already says what `desired` says. */
export function sameCondition(
  current: { status?: string; reason?: string; message?: string } | undefined,
  desired: DesiredCondition,
): boolean {
  return (
    current !== undefined &&
    current.status === desired.status &&
    current.reason === desired.reason &&
    current.message === desired.message
  );
}

function bounded(message: string): string {
  return message.length <= MAX_MESSAGE ? message : `${message.slice(0, MAX_MESSAGE - 1)}…`;
}
