/** Self-healing's taint (`npu-fault.io/unhealthy:NoSchedule`) in a Node's taint list. */
import { UNHEALTHY_TAINT_KEY } from '../../../contracts/index.js';
import type { Taint } from '../node-client.js';

/** Whether the node carries our taint (key and effect). */
export function hasTaint(taints: readonly Taint[]): boolean {
  return taints.some((t) => t.key === UNHEALTHY_TAINT_KEY && t.effect === 'NoSchedule');
}

/** The taints without ours (only our key with our effect). */
export function withoutTaint(taints: readonly Taint[]): Taint[] {
  return taints.filter((t) => !(t.key === UNHEALTHY_TAINT_KEY && t.effect === 'NoSchedule'));
}

/** The taints with ours added (once). */
export function withTaint(taints: readonly Taint[], now: number): Taint[] {
  if (hasTaint(taints)) return [...taints];
  return [
    ...taints,
    { key: UNHEALTHY_TAINT_KEY, value: 'true', effect: 'NoSchedule', timeAdded: new Date(now).toISOString() },
  ];
}
