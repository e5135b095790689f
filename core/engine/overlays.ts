/**
 * Node overlays (CONTRACT §3.7): the node reasons of the catalogue (contracts/reasons.ts).
 * They never touch the state machine's state or timers; they change only what is
 * *published*: while any holds, a device whose state is `healthy`, `degraded` (or still
 * `unknown`) is published `unknown` with the overlay as its reason; `failed` stays `failed`.
 * Lifting the overlay publishes the state machine's state again.
 *
 * The overlays are bits of one node mask, in the catalogue's order. The engine raises three
 * of them itself (a timer, the Node's Ready condition) and knows them by their bit here; any
 * other is raised by its own check of each fresh snapshot (reason-table.ts).
 */
import { REASONS, nodeReasons, type NodeReasonId, type NodeReasonSpec } from '../../contracts/index.js';
import type { DeviceStatus } from './api.js';

/**
 * What the node mask's bits publish: each one's name and the node `agent` it sets (null:
 * unchanged), and which bits publish the node's devices `unknown` (`overlay`: every node
 * reason but a warning one, which is a signal on each device instead).
 */
export interface NodeReasons {
  readonly names: readonly string[];
  readonly agents: readonly (Exclude<NodeReasonSpec['agent'], undefined> | null)[];
  readonly overlay: number;
}

const CATALOGUE_NODES = nodeReasons(REASONS);
const FIXED_NODES = CATALOGUE_NODES.filter((r) => r.family === undefined);

/** The catalogue's fixed node reasons (what a table compiled from it publishes, less the rules' `node_conditions`); overlays only the engine's own. */
export const NODE_REASONS: NodeReasons = {
  names: FIXED_NODES.map((r) => r.name),
  agents: FIXED_NODES.map((r) => r.agent ?? null),
  // Only the reasons that are critical whatever the rules: a rules-chosen severity needs the rules.
  overlay: FIXED_NODES.reduce((mask, r, i) => (r.severity === undefined ? mask | (1 << i) : mask), 0),
};

const bitOf = (id: NodeReasonId): number => 1 << CATALOGUE_NODES.findIndex((r) => r.id === id);

/** No snapshot from the node for 5 s (receiver clock). */
export const AGENT_UNREACHABLE = bitOf('agent-unreachable');
/** The Node's Ready condition is False or Unknown. */
export const NODE_NOT_READY = bitOf('node-not-ready');
/** Only cached snapshots for 10 s: the node's health tool is failing. */
export const COLLECTOR_ERROR = bitOf('collector-error');

/** The node reasons the engine raises itself, by id: the bit it raises each by. */
export const ENGINE_NODE_REASONS: Readonly<Record<string, number>> = {
  'agent-unreachable': AGENT_UNREACHABLE,
  'node-not-ready': NODE_NOT_READY,
  'collector-error': COLLECTOR_ERROR,
};

/** Overlay names of a mask, in publication order. */
export function overlayNames(mask: number, nodes: NodeReasons = NODE_REASONS): string[] {
  const out: string[] = [];
  for (let rest = mask; rest !== 0; rest &= rest - 1) {
    const name = nodes.names[31 - Math.clz32(rest & -rest)];
    if (name !== undefined) out.push(name);
  }
  return out;
}

/** The first overlay of a mask, or null. */
export function firstOverlay(mask: number, nodes: NodeReasons = NODE_REASONS): string | null {
  if (mask === 0) return null;
  return nodes.names[31 - Math.clz32(mask & -mask)] ?? null;
}

const EVERY_BIT = { overlay: -1 };

/** The published status of a device in `state` on a node with `overlays` (only `nodes.overlay` bits count). */
export function publishedStatus(
  state: DeviceStatus,
  overlays: number,
  nodes: Pick<NodeReasons, 'overlay'> = EVERY_BIT,
): DeviceStatus {
  return (overlays & nodes.overlay) !== 0 && state !== 'failed' ? 'unknown' : state;
}

/** The node's `agent` field: the first overlay in order that sets one (`stale` beats `collector-error`). */
export function agentState(
  overlays: number,
  nodes: NodeReasons = NODE_REASONS,
): 'ok' | 'stale' | 'collector-error' {
  for (let rest = overlays; rest !== 0; rest &= rest - 1) {
    const agent = nodes.agents[31 - Math.clz32(rest & -rest)];
    if (agent) return agent;
  }
  return 'ok';
}
