/**
 * Node overlays (CONTRACT §2.5). They never touch the state machine's state or timers; they
 * change only what is *published*: while any holds, a device whose state is `healthy`,
 * `degraded` (or still `unknown`) is published `unknown` with the overlay as its reason;
 * `failed` stays `failed`. Lifting the overlay publishes the state machine's state again.
 *
 * The overlays are bits of one node mask, in §2.6 order.
 */
import type { DeviceStatus } from './api.js';

/** No snapshot from the node for 5 s (receiver clock). */
export const AGENT_UNREACHABLE = 1;
/** The Node's Ready condition is False or Unknown. */
export const NODE_NOT_READY = 2;
/** Only cached snapshots for 10 s: the node's health tool is failing. */
export const COLLECTOR_ERROR = 4;

const NAMES: Record<number, string> = {
  [AGENT_UNREACHABLE]: 'agent-unreachable',
  [NODE_NOT_READY]: 'node-not-ready',
  [COLLECTOR_ERROR]: 'collector-error',
};

/** Overlay names of a mask, in §2.6 order. */
export function overlayNames(mask: number): string[] {
  const out: string[] = [];
  for (const bit of [AGENT_UNREACHABLE, NODE_NOT_READY, COLLECTOR_ERROR]) {
    if ((mask & bit) !== 0) out.push(NAMES[bit] as string);
  }
  return out;
}

/** The first overlay of a mask, or null. */
export function firstOverlay(mask: number): string | null {
  if (mask === 0) return null;
  return NAMES[mask & -mask] ?? null;
}

/** The published status of a device in `state` on a node with `overlays`. */
export function publishedStatus(state: DeviceStatus, overlays: number): DeviceStatus {
  return overlays !== 0 && state !== 'failed' ? 'unknown' : state;
}

/** The node's `agent` field: `stale` beats `collector-error`; node-not-ready is not the agent's. */
export function agentState(overlays: number): 'ok' | 'stale' | 'collector-error' {
  if ((overlays & AGENT_UNREACHABLE) !== 0) return 'stale';
  return (overlays & COLLECTOR_ERROR) !== 0 ? 'collector-error' : 'ok';
}
