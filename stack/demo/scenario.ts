/**
 * The pipeline demo's scripted faults on a fleet: which device gets which fault, the status
 * each fault must reach (a report row each), and the status every device must end in.
 * Pure: the runner (pipeline.ts) injects, observes and fills in the times.
 */
import type { PublishedDocument, PublishedNode } from '../../contracts/index.js';
import { buildFleet, mixedFleet, type SimKind, type SimNode } from '../../core/sim/index.js';

/** `full`: the 16-node mixed fleet; `short`: seven nodes, the same faults (tests, quick looks). */
export type ScenarioSize = 'full' | 'short';

/** The fleet of a scenario; seed 1 matches the agents' `--sim-seed=1`. */
export function demoFleet(size: ScenarioSize): SimNode[] {
  if (size === 'full') return mixedFleet(1);
  return buildFleet(
    [
      { kind: '910B', count: 1 },
      { kind: 'A3', count: 1 },
      { kind: '310P', count: 1 },
      { kind: 'nvidia', count: 2 },
      // Around the cards: a NIC going down, a serving node whose answers go wrong.
      { kind: '910B', count: 1 },
      { kind: 'nvidia', count: 1 },
    ],
    1,
  );
}

/** A device (or every device of a node: `device` null) reaching `status`. */
export interface Expectation {
  key: string;
  text: string;
  node: string;
  devices: string[];
  status: 'healthy' | 'degraded' | 'failed' | 'unknown';
  reason: string | null;
}

/** Where each fault goes. */
export interface FaultPlan {
  heat: { node: string; device: string };
  ecc: { node: string; device: string };
  link: { node: string; device: string; siblings: string[] };
  vanish: { node: string; device: string };
  silent: { node: string; devices: string[] };
  /** A node problem: a NIC that matters goes down (every device of the node unknown). */
  nic: { node: string; devices: string[] };
  /** The node whose agent runs the inference canary against the demo's stand-in server. */
  canary: { node: string; devices: string[] };
}

function pick(fleet: readonly SimNode[], kind: SimKind, preferred: string, taken: Set<string>): SimNode {
  const node =
    fleet.find((n) => n.name === preferred && !taken.has(n.name)) ??
    fleet.find((n) => n.kind === kind && !taken.has(n.name)) ??
    fleet.find((n) => !taken.has(n.name));
  if (!node) throw new Error('the fleet is too small for the scenario (seven nodes at least)');
  taken.add(node.name);
  return node;
}

/** Places the faults on `fleet` (the core scenario's nodes where the fleet has them). */
export function planFaults(fleet: readonly SimNode[]): FaultPlan {
  const taken = new Set<string>();
  const heat = pick(fleet, '910B', 'atlas900-node-003', taken);
  const ecc = pick(fleet, 'nvidia', 'gpu-node-002', taken);
  const link = pick(fleet, '310P', 'atlas300-node-002', taken);
  const vanish = pick(fleet, 'A3', 'atlas300-node-004', taken);
  const silent = pick(fleet, 'nvidia', 'gpu-node-005', taken);
  const nic = pick(fleet, '910B', 'atlas900-node-001', taken);
  const canary = pick(fleet, 'nvidia', 'gpu-node-001', taken);
  const device = (node: SimNode, index: number): string => (node.devices[index] ?? node.devices[0]!).id;
  const linkDevice = link.devices[2] ?? link.devices[0]!;
  return {
    heat: { node: heat.name, device: device(heat, 5) },
    ecc: { node: ecc.name, device: device(ecc, 3) },
    // A 310P card's chips share its PCIe link: the other chip of the card goes down with it.
    link: {
      node: link.name,
      device: linkDevice.id,
      siblings: link.devices.filter((d) => d.busId === linkDevice.busId).map((d) => d.id),
    },
    vanish: { node: vanish.name, device: device(vanish, 6) },
    silent: { node: silent.name, devices: silent.devices.map((d) => d.id) },
    nic: { node: nic.name, devices: nic.devices.map((d) => d.id) },
    canary: { node: canary.name, devices: canary.devices.map((d) => d.id) },
  };
}

/** The rows of the report, in the order the faults are injected. */
export function expectations(plan: FaultPlan): Record<string, Expectation> {
  const one = (
    key: string,
    text: string,
    at: { node: string; device: string },
    status: Expectation['status'],
    reason: string | null,
  ): Expectation => ({ key, text, node: at.node, devices: [at.device], status, reason });
  const { heat, ecc, link, vanish, silent, nic, canary } = plan;
  const whole = (
    key: string,
    text: string,
    at: { node: string; devices: string[] },
    status: Expectation['status'],
    reason: string | null,
  ): Expectation => ({ key, text, node: at.node, devices: at.devices, status, reason });
  return {
    heatDegraded: one('heatDegraded', `heat ${heat.node}/${heat.device}`, heat, 'degraded', 'high-temp'),
    heatFailed: one('heatFailed', `heat ${heat.node}/${heat.device}`, heat, 'failed', 'high-temp'),
    eccDegraded: one('eccDegraded', `ECC storm ${ecc.node}/${ecc.device}`, ecc, 'degraded', 'ecc-error'),
    link: one('link', `link down ${link.node}/${link.device}`, link, 'failed', 'pcie-link-down'),
    vanish: one('vanish', `vanished ${vanish.node}/${vanish.device}`, vanish, 'failed', 'device-missing'),
    silence: {
      key: 'silence',
      text: `agent silent ${silent.node}`,
      node: silent.node,
      devices: silent.devices,
      status: 'unknown',
      reason: 'agent-unreachable',
    },
    silenceEnded: {
      key: 'silenceEnded',
      text: `agent back ${silent.node}`,
      node: silent.node,
      devices: silent.devices,
      status: 'healthy',
      reason: null,
    },
    nicDown: whole('nicDown', `NIC down ${nic.node}`, nic, 'unknown', 'nic-link-down'),
    nicUp: whole('nicUp', `NIC back ${nic.node}`, nic, 'healthy', null),
    canaryDegraded: whole(
      'canaryDegraded',
      `wrong answers ${canary.node}`,
      canary,
      'degraded',
      'inference-canary-failed',
    ),
    canaryRecovered: whole('canaryRecovered', `right answers ${canary.node}`, canary, 'healthy', null),
    eccFailed: one(
      'eccFailed',
      `uncorrectable ${ecc.node}/${ecc.device}`,
      ecc,
      'failed',
      'ecc-uncorrectable',
    ),
  };
}

/** A device's status in a node entry (absent: healthy). */
export function deviceStatus(entry: PublishedNode | null | undefined, device: string): string {
  return entry?.npus.find((d) => d.id === device)?.status ?? 'healthy';
}

/** Whether `entry` (a node's published entry, null while healthy) shows `e`. */
export function entryShows(entry: PublishedNode | null | undefined, e: Expectation): boolean {
  return e.devices.every((id) => {
    if (e.status === 'healthy') return deviceStatus(entry, id) === 'healthy';
    const d = entry?.npus.find((n) => n.id === id);
    if (!d || d.status !== e.status) return false;
    return e.reason === null || d.reason === e.reason || d.reasons.includes(e.reason);
  });
}

/** Whether the document shows `e`. */
export function documentShows(doc: PublishedDocument, e: Expectation): boolean {
  return entryShows(doc.nodes[e.node], e);
}

/** The status every device must end in: the faulted ones failed, the rest healthy. */
export function finalStatuses(fleet: readonly SimNode[], plan: FaultPlan): Map<string, string> {
  const out = new Map<string, string>();
  for (const node of fleet) for (const d of node.devices) out.set(`${node.name}/${d.id}`, 'healthy');
  const failed = [
    `${plan.heat.node}/${plan.heat.device}`,
    `${plan.ecc.node}/${plan.ecc.device}`,
    ...plan.link.siblings.map((id) => `${plan.link.node}/${id}`),
    `${plan.vanish.node}/${plan.vanish.device}`,
  ];
  for (const key of failed) out.set(key, 'failed');
  return out;
}

/** Devices whose final status is not the expected one, as one line each. */
export function checkFinal(
  fleet: readonly SimNode[],
  plan: FaultPlan,
  doc: PublishedDocument | undefined,
): string[] {
  if (!doc) return ['no status document was published'];
  const problems: string[] = [];
  for (const [key, want] of finalStatuses(fleet, plan)) {
    const [node, device] = key.split('/') as [string, string];
    const got = doc.unobserved.includes(node) ? 'unknown' : deviceStatus(doc.nodes[node], device);
    if (got !== want) problems.push(`${key}: ${got}, expected ${want}`);
  }
  return problems;
}
