/**
 * Plays a scenario through a detection engine the way the controller would see it: each
 * snapshot arrives a little after it was collected (`observe(snapshot, receivedAt)`), and
 * the engine ticks once per second so that staleness overlays fire. Then checks what the
 * engine did against the scenario's labels. Pure: the engine is passed in, and the caller
 * decides how fast to walk the steps (the demo sleeps between them; tests do not).
 */
import type { DetectionEngine, Transition } from '../engine/index.js';
import { deliver, type Trace } from './generate.js';
import { scenarioTrace, type ExpectedLabel, type Scenario, type ScenarioEvent } from './scenario.js';

/** What happened in one simulated second. */
export interface ScenarioStep {
  /** Seconds after the start (this step covers (second, second + 1]). */
  second: number;
  /** The receiver's clock at the end of the step (epoch ms): the tick's `now`. */
  now: number;
  /** Narrative events of this second. */
  events: ScenarioEvent[];
  /** Published status changes, in the order the engine reported them. */
  transitions: Transition[];
  /** Snapshots applied and dropped in this step. */
  accepted: number;
  dropped: number;
}

/**
 * Walks the scenario one simulated second at a time. The last step runs one second past
 * the trace so the final second's snapshots (still in flight) are delivered.
 */
export function* playScenario(
  engine: DetectionEngine,
  scenario: Scenario,
  trace: Trace = scenarioTrace(scenario),
): Generator<ScenarioStep> {
  const deliveries = deliver(trace.snapshots, { seed: scenario.seed });
  let next = 0;
  for (let second = 0; second <= scenario.seconds; second++) {
    const now = scenario.start + (second + 1) * 1000;
    const step: ScenarioStep = {
      second,
      now,
      events: scenario.events.filter((e) => e.at === second),
      transitions: [],
      accepted: 0,
      dropped: 0,
    };
    for (let d = deliveries[next]; d !== undefined && d.receivedAt <= now; d = deliveries[++next]) {
      const result = engine.observe(d.snapshot, d.receivedAt);
      if (result.accepted) step.accepted++;
      else step.dropped++;
      step.transitions.push(...result.transitions);
    }
    step.transitions.push(...engine.tick(now));
    yield step;
  }
}

/** A device's status and reason as published in a document (CONTRACT §3). */
export interface PublishedDevice {
  status: string;
  reason: string | null;
}

/**
 * Reads `nodes[*].npus[*]` of a published document into `node/id -> {status, reason}`.
 * Devices the document leaves out are healthy (it lists only devices with trouble).
 */
export function publishedDevices(document: unknown): Map<string, PublishedDevice> {
  const out = new Map<string, PublishedDevice>();
  const nodes = (document as { nodes?: Record<string, { npus?: unknown[] }> } | null)?.nodes ?? {};
  for (const [name, node] of Object.entries(nodes)) {
    for (const raw of node.npus ?? []) {
      const d = raw as { id?: unknown; status?: unknown; reason?: unknown };
      if (typeof d.id !== 'string') continue;
      out.set(`${name}/${d.id}`, {
        status: String(d.status),
        reason: typeof d.reason === 'string' ? d.reason : null,
      });
    }
  }
  return out;
}

function secondsAfter(start: number, at: string): number {
  return (Date.parse(at) - start) / 1000;
}

function checkLabel(
  label: ExpectedLabel,
  start: number,
  list: readonly Transition[],
  published: Map<string, PublishedDevice> | undefined,
): string[] {
  const name = `${label.node} ${label.device}`;
  const problems: string[] = [];
  const up = list.findIndex((t) => t.to === 'healthy');
  if (up === -1) return [`${name}: never came up healthy`];
  const rest = list.slice(up + 1);
  for (const t of rest) {
    if (label.never.includes(t.to))
      problems.push(
        `${name}: moved to ${t.to} (${t.reason ?? 'no reason'}) at +${secondsAfter(start, t.at)}s; expected never`,
      );
  }
  let from = 0;
  for (const step of label.steps) {
    const i = rest.findIndex((t, k) => k >= from && t.to === step.to && t.reason === step.reason);
    const t = rest[i];
    if (!t) {
      problems.push(`${name}: expected -> ${step.to} (${step.reason ?? 'no reason'}); it did not happen`);
      continue;
    }
    const s = secondsAfter(start, t.at);
    if (s < step.within[0] || s >= step.within[1])
      problems.push(`${name}: -> ${step.to} at +${s}s, expected within [${step.within.join(', ')})`);
    from = i + 1;
  }
  const final = list[list.length - 1]?.to;
  if (final !== label.final)
    problems.push(`${name}: ends ${final ?? 'with no transition'}, expected ${label.final}`);
  const doc = published?.get(`${label.node}/${label.device}`) ?? { status: 'healthy', reason: null };
  if (published && (doc.status !== label.final || doc.reason !== label.finalReason)) {
    problems.push(
      `${name}: published ${doc.status} (${doc.reason ?? 'no reason'}), expected ${label.final} (${label.finalReason ?? 'no reason'})`,
    );
  }
  return problems;
}

/**
 * Compares what an engine did with the scenario's labels. `transitions` are every
 * transition of the run; `document` (optional) is the final published document, checked
 * for each device's final status and reason. Returns one line per problem; empty when the
 * engine behaved exactly as labelled.
 */
export function checkLabels(
  scenario: Scenario,
  transitions: readonly Transition[],
  document?: unknown,
): string[] {
  const byDevice = new Map<string, Transition[]>();
  for (const t of transitions) {
    const key = `${t.node}/${t.npu}`;
    const list = byDevice.get(key) ?? [];
    list.push(t);
    byDevice.set(key, list);
  }
  const published = document === undefined ? undefined : publishedDevices(document);
  const problems: string[] = [];
  const labelled = new Set<string>();
  for (const label of scenario.expected) {
    const key = `${label.node}/${label.device}`;
    labelled.add(key);
    problems.push(...checkLabel(label, scenario.start, byDevice.get(key) ?? [], published));
  }
  for (const key of byDevice.keys())
    if (!labelled.has(key)) problems.push(`${key}: a transition for a device the fleet does not have`);
  return problems;
}
