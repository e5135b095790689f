/**
 * The demo's scripted scenario: five minutes of a mixed 16-node fleet in which things go
 * wrong on a timeline, with the labels a correct engine must produce (which device ends in
 * which status, and why). The demo plays it; tests check the engine against the labels.
 *
 * Timeline (seconds after start; CONTRACT §2 defaults):
 *
 *   0    every device reports in: unknown -> healthy
 *   15   atlas900-node-002 npu1 spikes to ~93 °C for two samples (2 of 5 < 3): nothing
 *   20   atlas900-node-003 npu5 heats to ~90 °C and stays: high-temp from ~26,
 *        degraded ~60 s later (~86), failed 180 s after that (~266)
 *   40   gpu-node-002 gpu3 correctable ECC storm: ecc-error, degraded at ~100
 *   90   atlas300-node-002 card 2 PCIe link down: npu2 and npu3 failed at once
 *   110  atlas300-node-004 card 4 vanishes from the tool's output: npu6, npu7 device-missing
 *   130  gpu-node-002 gpu3 uncorrectable ECC: failed, latched (storm ends at 150; it stays failed)
 *   160  gpu-node-005's agent goes silent: agent-unreachable (unknown) ~5 s later;
 *   180  it is back: healthy again
 *   210  atlas900-node-006 (A3)'s agent restarts: new boot_id, seq 1: nothing changes
 *   300  end
 */
import type { DeviceStatus } from '../engine/index.js';
import type { Fault } from './faults.js';
import { mixedFleet, type SimNode } from './fleet.js';
import { generateTrace, toEpoch, type Trace } from './generate.js';

/** One transition a device must make: to `to` with `reason`, inside a window of seconds. */
export interface ExpectedStep {
  to: DeviceStatus;
  /** The published reason at the transition (null: no reason, as on recovery). */
  reason: string | null;
  /** [earliest, latest) seconds after the start, for the transition's `at`. */
  within: [number, number];
}

/** What a correct engine does with one device over the scenario. */
export interface ExpectedLabel {
  node: string;
  /** Display id (`npu5`, `gpu3`). */
  device: string;
  /** Published status at the end. */
  final: DeviceStatus;
  /** Published reason at the end (null when healthy). */
  finalReason: string | null;
  /** Transitions that must happen, in this order (after the first unknown -> healthy). */
  steps: ExpectedStep[];
  /** Statuses the device must never move to after it first comes up healthy. */
  never: DeviceStatus[];
  /** Why, in words. */
  why: string;
}

/** A narrative line the demo prints at its second. */
export interface ScenarioEvent {
  at: number;
  text: string;
}

/** A scripted scenario: fleet, faults, narrative and expected labels. */
export interface Scenario {
  title: string;
  /** A few lines explaining what is simulated. */
  description: string[];
  fleet: SimNode[];
  seconds: number;
  seed: number | string;
  /** Epoch ms of second 0. */
  start: number;
  faults: Fault[];
  events: ScenarioEvent[];
  /** One label per device in the fleet. */
  expected: ExpectedLabel[];
}

/** Scenario node and device names, for tests and the demo. */
export const SCENARIO = {
  spike: { node: 'atlas900-node-002', device: 'npu1' },
  heat: { node: 'atlas900-node-003', device: 'npu5' },
  ecc: { node: 'gpu-node-002', device: 'gpu3' },
  linkDown: { node: 'atlas300-node-002', devices: ['npu2', 'npu3'] },
  vanish: { node: 'atlas300-node-004', devices: ['npu6', 'npu7'] },
  silent: { node: 'gpu-node-005' },
  restart: { node: 'atlas900-node-006' },
} as const;

const SECONDS = 300;

function faults(): Fault[] {
  const { spike, heat, ecc, linkDown, vanish, silent, restart } = SCENARIO;
  return [
    { kind: 'spike', ...spike, from: 15, celsius: 93 },
    { kind: 'heat', ...heat, from: 20, celsius: 90 },
    { kind: 'ecc-storm', ...ecc, from: 40, to: 150 },
    { kind: 'link-down', node: linkDown.node, device: linkDown.devices[0], from: 90 },
    ...vanish.devices.map((device): Fault => ({ kind: 'vanish', node: vanish.node, device, from: 110 })),
    { kind: 'ecc-uncorrectable', ...ecc, from: 130 },
    { kind: 'silence', node: silent.node, from: 160, to: 180 },
    { kind: 'restart', node: restart.node, from: 210, to: 212 },
  ];
}

function events(): ScenarioEvent[] {
  const { spike, heat, ecc, linkDown, vanish, silent, restart } = SCENARIO;
  return [
    { at: 0, text: '16 agents start reporting, one snapshot per node per second' },
    {
      at: 15,
      text: `${spike.node} ${spike.device} spikes to 93 °C for two samples (a burst of load; 2 of 5 is not sustained)`,
    },
    { at: 20, text: `${heat.node} ${heat.device}: a fan fails; the NPU climbs to ~90 °C and stays there` },
    { at: 40, text: `${ecc.node} ${ecc.device}: HBM starts throwing correctable ECC errors` },
    { at: 90, text: `${linkDown.node}: card 2's PCIe link drops (chips ${linkDown.devices.join(', ')})` },
    {
      at: 110,
      text: `${vanish.node}: card 4 (${vanish.devices.join(', ')}) vanishes from the tool's output`,
    },
    { at: 130, text: `${ecc.node} ${ecc.device}: an uncorrectable (double-bit) ECC error` },
    {
      at: 150,
      text: `${ecc.node} ${ecc.device}: the ECC storm stops (the uncorrectable error stays latched)`,
    },
    { at: 160, text: `${silent.node}: its agent goes silent (network partition)` },
    { at: 180, text: `${silent.node}: the agent is back` },
    { at: 210, text: `${restart.node} (A3): the agent restarts (new boot_id, seq from 1)` },
    { at: 212, text: `${restart.node}: back after 2 s; a restart is not a fault, so nothing changes` },
  ];
}

function labels(fleet: readonly SimNode[]): ExpectedLabel[] {
  const { spike, heat, ecc, linkDown, vanish, silent, restart } = SCENARIO;
  const quiet = (node: string, device: string, why: string): ExpectedLabel => ({
    node,
    device,
    final: 'healthy',
    finalReason: null,
    steps: [],
    never: ['unknown', 'degraded', 'failed'],
    why,
  });
  const special = new Map<string, ExpectedLabel>();
  const set = (label: ExpectedLabel): void => void special.set(`${label.node}/${label.device}`, label);

  set(quiet(spike.node, spike.device, 'two hot samples are 2 of 5: high-temp needs 3 of the last 5'));
  set({
    ...heat,
    final: 'failed',
    finalReason: 'high-temp',
    never: ['unknown'],
    steps: [
      { to: 'degraded', reason: 'high-temp', within: [80, 96] },
      { to: 'failed', reason: 'high-temp', within: [260, 277] },
    ],
    why: 'over 85 °C in 3 of 5 samples from ~26 s: degraded 60 s later, failed 180 s after that',
  });
  set({
    ...ecc,
    final: 'failed',
    finalReason: 'ecc-uncorrectable',
    never: ['unknown'],
    steps: [
      { to: 'degraded', reason: 'ecc-error', within: [99, 111] },
      { to: 'failed', reason: 'ecc-uncorrectable', within: [130, 131] },
    ],
    why: 'ECC errors in every 5-sample window for 60 s: degraded; an uncorrectable error fails it and latches',
  });
  for (const device of linkDown.devices) {
    set({
      node: linkDown.node,
      device,
      final: 'failed',
      finalReason: 'pcie-link-down',
      never: ['unknown', 'degraded'],
      steps: [{ to: 'failed', reason: 'pcie-link-down', within: [90, 91] }],
      why: "the card's PCIe link is down while it still draws power: critical, failed in the same sample",
    });
  }
  for (const device of vanish.devices) {
    set({
      node: vanish.node,
      device,
      final: 'failed',
      finalReason: 'device-missing',
      never: ['unknown', 'degraded'],
      steps: [{ to: 'failed', reason: 'device-missing', within: [110, 111] }],
      why: 'seen earlier in this boot, then left out of the output: device-missing is critical',
    });
  }
  const out: ExpectedLabel[] = [];
  for (const node of fleet) {
    for (const device of node.devices) {
      const label = special.get(`${node.name}/${device.id}`);
      if (label) out.push(label);
      else if (node.name === silent.node) {
        out.push({
          node: node.name,
          device: device.id,
          final: 'healthy',
          finalReason: null,
          never: ['degraded', 'failed'],
          steps: [
            { to: 'unknown', reason: 'agent-unreachable', within: [164, 167] },
            { to: 'healthy', reason: null, within: [180, 181] },
          ],
          why: 'no snapshot for 5 s: published unknown (agent-unreachable) until the agent is back',
        });
      } else if (node.name === restart.node) {
        out.push(quiet(node.name, device.id, 'an agent restart (2 s gap, new boot_id) is not a fault'));
      } else out.push(quiet(node.name, device.id, 'nothing happens to it'));
    }
  }
  return out;
}

/**
 * Builds the scenario. The labels hold for any seed: the seed only moves noise, load and
 * sampling phases, and every window is wide enough for that.
 */
export function demoScenario(options: { seed?: number | string; start?: number | string } = {}): Scenario {
  const seed = options.seed ?? 7;
  const fleet = mixedFleet(seed);
  return {
    title: 'npu-fault demo: a mixed 16-node accelerator fleet, five simulated minutes',
    description: [
      `${fleet.length} nodes, ${fleet.reduce((n, x) => n + x.devices.length, 0)} devices: 5x 910B (8 NPUs), 1x A3 (8 NPUs x 2 chips),`,
      '5x 310P (4 Atlas 300I Duo cards x 2 chips, card-level power), 5x H100 (8 GPUs).',
      'Each agent sends one hdc.health/v1 snapshot per second; the engine applies the',
      'CONTRACT §2 defaults: high-temp = 3 of 5 samples > 85 °C, degraded after 60 s of a',
      'warning, failed after 180 s degraded or at once on a critical reason, stale after 5 s.',
    ],
    fleet,
    seconds: SECONDS,
    seed,
    start: toEpoch(options.start),
    faults: faults(),
    events: events(),
    expected: labels(fleet),
  };
}

/** Generates the scenario's snapshots. */
export function scenarioTrace(scenario: Scenario): Trace {
  return generateTrace({
    nodes: scenario.fleet,
    seconds: scenario.seconds,
    faults: scenario.faults,
    seed: scenario.seed,
    start: scenario.start,
  });
}
