/**
 * `npu-fault demo` runs the real pipeline (stack/demo/pipeline.ts); `npu-fault demo --engine-only
 * [--fast] [--speed <x>] [--seed <n>]` (this file) plays the simulator's scripted
 * scenario (core/sim/scenario.ts: a mixed 16-node fleet, five minutes of faults) through
 * the real detection engine and prints each change of published status as it happens,
 * time-compressed, then the published document as a per-node table and a check of every
 * device against the scenario's labels.
 *
 * Pacing: on a terminal, each simulated second waits 1/speed s (default 12x: five
 * minutes in about 25 s) through the injected `sleep`; with --fast, or when stdout is not a
 * terminal, nothing waits. Colour only on a terminal, and never with NO_COLOR set.
 * Exit 0 when the engine did what the labels say, 1 when it did not (the demo doubles as
 * an end-to-end smoke test), 2 on bad usage.
 */
import type { PublishedDocument, PublishedNode } from '../../contracts/index.js';
import { createEngine, type Transition } from '../../core/engine/index.js';
import {
  checkLabels,
  demoScenario,
  playScenario,
  scenarioTrace,
  type Scenario,
  type ScenarioStep,
} from '../../core/sim/index.js';
import {
  booleanOption,
  excerpt,
  isExit,
  numberOption,
  settleCommandLine,
  stringOption,
  UsageError,
  type ParsedArgs,
} from '../../cli/args.js';
import { EXIT_DATA, type CliIO, type Subcommand } from '../../cli/io.js';
import { DEMO } from '../../cli/specs.js';

/** Injected effects, so tests run the demo with no real time and a chosen environment. */
export interface DemoDeps {
  /** Waits `ms` milliseconds; default a real timer. */
  sleep?: (ms: number) => Promise<void>;
  /** Environment (for NO_COLOR); default process.env. */
  env?: Readonly<Record<string, string | undefined>>;
}

interface DemoArgs {
  pipeline: false;
  fast: boolean;
  speed: number;
  seed: number | string;
}

const DEFAULT_SPEED = 12;
const NODE_WIDTH = 17;
const DEVICE_WIDTH = 11;

/** `--pipeline` and its options. */
interface PipelineArgs {
  pipeline: true;
  existingCluster: boolean;
  scenario: 'full' | 'short';
}

function toDemoArgs(args: ParsedArgs): DemoArgs | PipelineArgs {
  // The real pipeline is the default; --engine-only, or an option only it has, picks the
  // in-process engine demo.
  const engineFlag = ['fast', 'speed', 'seed'].find((name) => args.values[name] !== undefined);
  const pipelineFlag = ['existing-cluster', 'scenario'].find((name) => args.values[name] !== undefined);
  const engineOnly = booleanOption(args, 'engine-only') || engineFlag !== undefined;
  if (booleanOption(args, 'pipeline') && engineOnly)
    throw new UsageError(
      `--pipeline and ${engineFlag ? `--${engineFlag}` : '--engine-only'} exclude each other (--${engineFlag ?? 'engine-only'} is for the engine-only demo)`,
    );
  if (engineOnly && pipelineFlag)
    throw new UsageError(`--${pipelineFlag} is for the pipeline demo, not --engine-only`);
  const scenario = stringOption(args, 'scenario');
  if (!engineOnly) {
    if (scenario !== undefined && scenario !== 'full' && scenario !== 'short')
      throw new UsageError(`--scenario must be full or short, not '${excerpt(scenario)}'`);
    return {
      pipeline: true,
      existingCluster: booleanOption(args, 'existing-cluster'),
      scenario: scenario === 'short' ? 'short' : 'full',
    };
  }
  const seed = stringOption(args, 'seed') ?? '7';
  return {
    pipeline: false,
    fast: booleanOption(args, 'fast'),
    speed: numberOption(args, 'speed', { above: 0 }) ?? DEFAULT_SPEED,
    seed: /^\d+$/.test(seed) ? Number(seed) : seed,
  };
}

/** ANSI styling that collapses to plain text when colour is off. */
type Paint = (style: keyof typeof STYLES, text: string) => string;
const STYLES = {
  bold: '1',
  dim: '2',
  red: '1;31',
  green: '32',
  yellow: '33',
  blue: '34',
  magenta: '35',
  cyan: '36',
} as const;
const STATUS_STYLE: Record<string, keyof typeof STYLES> = {
  healthy: 'green',
  degraded: 'yellow',
  failed: 'red',
  unknown: 'magenta',
};

function painter(colour: boolean): Paint {
  return colour ? (style, text) => `\x1b[${STYLES[style]}m${text}\x1b[0m` : (_style, text) => text;
}

/** `+mm:ss` of an instant relative to the scenario's start. */
function clock(start: number, ms: number): string {
  const s = Math.max(0, Math.floor((ms - start) / 1000));
  return `+${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
}

/** Renders the lines of one simulated second. */
class Narrator {
  readonly #seen = new Set<string>();
  readonly #status = new Map<string, string>();
  readonly #sizes: Map<string, number>;

  constructor(
    private readonly scenario: Scenario,
    private readonly paint: Paint,
  ) {
    this.#sizes = new Map(scenario.fleet.map((n) => [n.name, n.devices.length]));
  }

  /** Published status counts so far, from the transitions seen. */
  counts(): Record<string, number> {
    const out: Record<string, number> = { healthy: 0, degraded: 0, failed: 0, unknown: 0 };
    for (const s of this.#status.values()) out[s] = (out[s] ?? 0) + 1;
    return out;
  }

  lines(step: ScenarioStep): string[] {
    const { paint } = this;
    const start = this.scenario.start;
    const out = step.events.map(
      (e) => `${paint('dim', `[${clock(start, start + e.at * 1000)}]`)} ${paint('cyan', `▸ ${e.text}`)}`,
    );
    const firstUp: Transition[] = [];
    const groups = new Map<string, Transition[]>();
    for (const t of step.transitions) {
      const device = `${t.node}/${t.npu}`;
      this.#status.set(device, t.to);
      if (!this.#seen.has(device) && t.from === 'unknown' && t.to === 'healthy') firstUp.push(t);
      else {
        const key = `${t.node}|${t.from}|${t.to}|${t.reason ?? ''}`;
        groups.set(key, [...(groups.get(key) ?? []), t]);
      }
      this.#seen.add(device);
    }
    if (firstUp.length > 0) {
      const nodes = new Set(firstUp.map((t) => t.node)).size;
      const who = `${nodes} node${nodes === 1 ? '' : 's'}`;
      out.push(this.#line(firstUp[0]!.at, who, `${firstUp.length} devices`, firstUp[0]!));
    }
    for (const list of groups.values())
      out.push(this.#line(list[0]!.at, list[0]!.node, this.#devices(list), list[0]!));
    return out;
  }

  #devices(list: readonly Transition[]): string {
    const ids = list.map((t) => t.npu);
    if (ids.length <= 3) return ids.join(' ');
    if (ids.length === this.#sizes.get(list[0]!.node)) return `all ${ids.length}`;
    return `${ids[0]}…${ids[ids.length - 1]} (${ids.length})`;
  }

  #line(at: string, who: string, devices: string, t: Transition): string {
    const { paint } = this;
    const from = paint(STATUS_STYLE[t.from] ?? 'dim', t.from.padStart(8));
    const to = paint(STATUS_STYLE[t.to] ?? 'dim', t.to.padEnd(8));
    const reason = t.reason ? paint(t.to === 'healthy' ? 'dim' : 'bold', t.reason) : '';
    const time = paint('dim', `[${clock(this.scenario.start, Date.parse(at))}]`);
    return `${time} ${paint('bold', who.padEnd(NODE_WIDTH))} ${devices.padEnd(DEVICE_WIDTH)} ${from} -> ${to} ${reason}`.trimEnd();
  }
}

function header(scenario: Scenario, args: DemoArgs, paced: boolean, paint: Paint): string {
  const minutes = `${Math.floor(scenario.seconds / 60)}:${String(scenario.seconds % 60).padStart(2, '0')}`;
  const pace = paced
    ? `Playing ${minutes} of fleet time at ${args.speed}x (about ${Math.round(scenario.seconds / args.speed)} s); --fast prints it at once.`
    : `Playing ${minutes} of fleet time without waiting.`;
  return [
    paint('bold', scenario.title),
    ...scenario.description.map((l) => `  ${l}`),
    `  ${pace}`,
    `  ${paint('cyan', '▸')} marks what the simulator does; the other lines are the engine's published status changes.`,
    '',
  ].join('\n');
}

function nodeRow(name: string, agent: string, s: PublishedNode['summary'], paint: Paint, note = ''): string {
  const num = (n: number, style: keyof typeof STYLES): string =>
    n > 0 ? paint(style, String(n).padStart(9)) : String(n).padStart(9);
  const agentCol = agent === 'ok' ? agent.padEnd(15) : paint('magenta', agent.padEnd(15));
  return `  ${name.padEnd(NODE_WIDTH)}  ${agentCol}${String(s.total).padStart(6)}${String(s.healthy).padStart(9)}${num(s.degraded, 'yellow')}${num(s.failed, 'red')}${num(s.unknown, 'magenta')}  ${paint('dim', note)}`.trimEnd();
}

/** The published document as a per-node table, bad devices listed under their node. */
function table(scenario: Scenario, doc: PublishedDocument, paint: Paint): string {
  const start = scenario.start;
  const lines = [
    paint(
      'bold',
      `Published document (fault.json) at ${clock(start, Date.parse(doc.timestamp))}, publisher ${doc.publisher.identity} term ${doc.publisher.term}:`,
    ),
    paint(
      'dim',
      `  ${'NODE'.padEnd(NODE_WIDTH)}  ${'AGENT'.padEnd(15)}${'TOTAL'.padStart(6)}${['HEALTHY', 'DEGRADED', 'FAILED', 'UNKNOWN'].map((h) => h.padStart(9)).join('')}`,
    ),
  ];
  for (const node of scenario.fleet) {
    const entry = doc.nodes[node.name];
    if (!entry) {
      const n = node.devices.length;
      const unobserved = doc.unobserved.includes(node.name);
      const summary = unobserved
        ? { total: n, healthy: 0, degraded: 0, failed: 0, unknown: n }
        : { total: n, healthy: n, degraded: 0, failed: 0, unknown: 0 };
      lines.push(
        nodeRow(
          node.name,
          unobserved ? 'unobserved' : 'ok',
          summary,
          paint,
          unobserved ? '' : 'not listed: all healthy',
        ),
      );
      continue;
    }
    lines.push(nodeRow(node.name, entry.agent, entry.summary, paint));
    for (const d of entry.npus) {
      const status = paint(STATUS_STYLE[d.status] ?? 'dim', d.status.padEnd(8));
      const detail = [
        d.reasons.length > 0 ? d.reasons.join(', ') : (d.reason ?? ''),
        d.signals.length > 0 ? `signals: ${d.signals.join(', ')}` : '',
        `since ${clock(start, Date.parse(d.since))}`,
        d.temperature_c !== null ? `${d.temperature_c} °C` : '',
        d.ecc_errors ? `ecc ${d.ecc_errors}` : '',
        d.pcie_link_status === 'down' ? 'link down' : '',
      ].filter(Boolean);
      lines.push(`      ${d.id.padEnd(8)} ${status} ${detail.join('  ')}`);
    }
  }
  const c = doc.cluster_summary;
  lines.push(
    '',
    `  ${paint('bold', 'cluster_summary')}  total ${c.total}  ${paint('green', `healthy ${c.healthy}`)}  degraded ${c.degraded}  ${paint('red', `failed ${c.failed}`)}  unknown ${c.unknown}`,
    paint(
      'dim',
      `  ${Object.keys(doc.nodes).length} of ${doc.node_count} nodes listed; fault.json is ${JSON.stringify(doc).length} bytes (it grows with trouble, not with the fleet)`,
    ),
  );
  return `${lines.join('\n')}\n`;
}

const realSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Builds the demo subcommand with its effects injected. */
export function createDemo(deps: DemoDeps = {}): Subcommand {
  const sleep = deps.sleep ?? realSleep;
  return async (args: string[], io: CliIO): Promise<number> => {
    const parsed = settleCommandLine(DEMO, args, io, toDemoArgs);
    if (isExit(parsed)) return parsed.exit;
    const env = deps.env ?? process.env;
    if (parsed.pipeline) {
      // Loaded only when asked for: it pulls in the Kubernetes client and the control plane.
      const { runPipelineDemo } = await import('./pipeline.js');
      return await runPipelineDemo(
        { existingCluster: parsed.existingCluster, scenario: parsed.scenario, env },
        io,
      );
    }
    const paint = painter(io.isTTY && !env.NO_COLOR);
    const paced = io.isTTY && !parsed.fast;
    const scenario = demoScenario({ seed: parsed.seed });
    const engine = createEngine();
    engine.setKnownNodes(scenario.fleet.map((n) => n.name));
    const narrator = new Narrator(scenario, paint);
    const all: Transition[] = [];
    let accepted = 0;
    let dropped = 0;
    let lastNow = scenario.start;

    io.stdout(`${header(scenario, parsed, paced, paint)}\n`);
    for (const step of playScenario(engine, scenario, scenarioTrace(scenario))) {
      all.push(...step.transitions);
      accepted += step.accepted;
      dropped += step.dropped;
      lastNow = step.now;
      const lines = narrator.lines(step);
      // On a terminal a status line sits under the log; it is cleared before new lines.
      if (paced) io.stdout('\r\x1b[2K');
      if (lines.length > 0) io.stdout(`${lines.join('\n')}\n`);
      if (paced) {
        const c = narrator.counts();
        io.stdout(
          paint(
            'dim',
            `  ${clock(scenario.start, step.now)}  healthy ${c.healthy}  degraded ${c.degraded}  failed ${c.failed}  unknown ${c.unknown}`,
          ),
        );
        await sleep(1000 / parsed.speed);
      }
    }
    if (paced) io.stdout('\r\x1b[2K');

    const doc = engine.document(lastNow, { identity: 'demo', term: 1 });
    io.stdout(
      `\n${paint('dim', `${accepted} snapshots observed, ${dropped} dropped, ${all.length} status changes.`)}\n\n`,
    );
    io.stdout(table(scenario, doc, paint));
    const problems = checkLabels(scenario, all, doc);
    if (problems.length === 0) {
      io.stdout(
        `\n${paint('green', `Scenario check: all ${scenario.expected.length} devices behaved as labelled.`)}\n`,
      );
      return 0;
    }
    io.stdout(
      `\n${paint('red', `Scenario check: ${problems.length} problem(s):`)}\n${problems.map((p) => `  - ${p}\n`).join('')}`,
    );
    return EXIT_DATA;
  };
}

/** The demo subcommand, with real timers. */
export const demo: Subcommand = createDemo();
