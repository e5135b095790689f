/**
 * The NVLink check: every interval `nvidia-smi nvlink --status` (through agent/probe's exec:
 * bounded output, a timeout, the process group killed), read by core/parsers'
 * parseNvlinkStatus, and `nvlink-down` while a GPU has links down (links.ts: a link seen up
 * that is now inactive, or one inactive while every other GPU has it up). One problem for the
 * node, naming each GPU and its links.
 *
 * A failing tool (not found, an exit code, a timeout) or an output that does not read is not a
 * problem of its own: nvlink-down is not reported while it lasts (the GPU collector, which
 * runs the same tool, reports the tool failing), it is counted in
 * `nvlink_check_runs_total{result}`, and each spell of failures gives one warn line, its end
 * one info line. XID 74 (an NVLink error) stays a device event of the kernel log.
 */
import { Counter, Gauge, type Metric } from 'prom-client';
import { ToolError, parseNvlinkStatus, type NvlinkGpu } from '../../../core/parsers/index.js';
import {
  metricPrefix,
  systemClock,
  type Clock,
  type Logger,
  type Registry,
} from '../../../platform/index.js';
import { createExecTool, firstLine, type ExecTool } from '../../probe/index.js';
import type { NodeCheck, NodeProblem } from '../check.js';
import type { NvlinkCheckConfig } from './config.js';
import { NvlinkMemory, describeDown, findDownLinks, listingPeers } from './links.js';

/** How a run went: read (`ok`), the tool failed or printed its own error, it took too long, or its output did not read. */
export const NVLINK_RUN_RESULTS = ['ok', 'tool-failed', 'timeout', 'unreadable'] as const;
/** One of NVLINK_RUN_RESULTS. */
export type NvlinkRunResult = (typeof NVLINK_RUN_RESULTS)[number];

/** What the NVLink check is built with. */
export interface NvlinkCheckDeps {
  log: Logger;
  registry: Registry;
  /** Runs the tool (default: agent/probe's createExecTool; the agent passes its own, with the drivers' library path). */
  exec?: ExecTool;
  /** The timeout's timer (default the system clock). */
  clock?: Clock;
}

/** The most a run may print: 72 GPUs × 18 links is about 40 KB. */
const MAX_OUTPUT_BYTES = 1024 * 1024;

/** Longest message of a node problem (contracts SNAPSHOT_LIMITS.problemMessage). */
const MAX_MESSAGE = 256;

/** The check's instruments, registered once per registry. */
interface NvlinkMetrics {
  runs: Counter<'result'>;
  links: Gauge<'state'>;
  down: Gauge;
}

function nvlinkMetrics(registry: Registry): NvlinkMetrics {
  const prefix = metricPrefix('agent');
  const registers = [registry];
  const once = <M extends Metric>(name: string, make: (name: string) => M): M =>
    (registry.getSingleMetric(`${prefix}${name}`) as M | undefined) ?? make(`${prefix}${name}`);
  return {
    runs: once(
      'nvlink_check_runs_total',
      (name) =>
        new Counter({
          name,
          help: 'Runs of nvidia-smi nvlink --status, by result (ok, tool-failed, timeout, unreadable)',
          labelNames: ['result'],
          registers,
        }),
    ),
    links: once(
      'nvlink_links',
      (name) =>
        new Gauge({
          name,
          help: 'NVLinks in the last read, by state (active, inactive, unknown)',
          labelNames: ['state'],
          registers,
        }),
    ),
    down: once(
      'nvlink_links_down',
      (name) =>
        new Gauge({
          name,
          help: 'NVLinks found down in the last read (GPUs whose links are all down count once)',
          registers,
        }),
    ),
  };
}

/** The node problem of the down links; null when none is. */
function problemOf(
  gpus: readonly NvlinkGpu[],
  memory: NvlinkMemory,
  comparePeers: boolean,
): { problem: NodeProblem | null; down: number } {
  const down = findDownLinks(gpus, memory, comparePeers);
  if (down.length === 0) return { problem: null, down: 0 };
  const text = down.map((found) => describeDown(found, listingPeers(found, gpus))).join('; ');
  const message = text.length <= MAX_MESSAGE ? text : `${text.slice(0, MAX_MESSAGE - 1)}…`;
  const count = down.reduce((sum, found) => sum + (found.allLinks ? 1 : found.links.length), 0);
  return { problem: { reason: 'nvlink-down', message }, down: count };
}

/** Builds the NVLink check; see the file comment. */
export function createNvlinkCheck(config: NvlinkCheckConfig, deps: NvlinkCheckDeps): NodeCheck {
  const exec = deps.exec ?? createExecTool();
  const clock = deps.clock ?? systemClock;
  const metrics = nvlinkMetrics(deps.registry);
  const memory = new NvlinkMemory();
  /** The failure of the spell going on, or null while runs read. */
  let failing: NvlinkRunResult | null = null;
  /** The last run's problems: a degraded fabric often makes the tool slow, which must not clear them. */
  let last: readonly NodeProblem[] = [];

  const failed = (result: NvlinkRunResult, error: unknown): readonly NodeProblem[] => {
    metrics.runs.inc({ result });
    if (failing === null) {
      const why = error instanceof Error ? firstLine(error.message) : firstLine(String(error));
      deps.log.warn(
        { check: 'nvlink', result, error: why },
        'cannot read the NVLinks; the last state stands until a run reads',
      );
    }
    failing = result;
    return last;
  };

  /** The tool's output, or the failure it ended in. */
  const runTool = async (
    signal: AbortSignal,
  ): Promise<string | { failed: NvlinkRunResult; error: unknown }> => {
    const timeout = new AbortController();
    const cancel = clock.schedule(config.timeoutMs, () =>
      timeout.abort(new Error(`no answer within ${config.timeoutMs} ms`)),
    );
    try {
      return await exec(config.command, ['nvlink', '--status'], {
        signal: AbortSignal.any([signal, timeout.signal]),
        maxOutputBytes: MAX_OUTPUT_BYTES,
      });
    } catch (error) {
      return { failed: timeout.signal.aborted ? 'timeout' : 'tool-failed', error };
    } finally {
      cancel();
    }
  };

  return {
    name: 'nvlink',
    intervalMs: config.intervalMs,
    async run(_now, signal) {
      if (config.enabled === false || signal.aborted) return [];
      const output = await runTool(signal);
      // A shutdown is nobody's failure.
      if (signal.aborted) return [];
      if (typeof output !== 'string') return failed(output.failed, output.error);
      let gpus: NvlinkGpu[];
      try {
        gpus = parseNvlinkStatus(output);
      } catch (error) {
        return failed(error instanceof ToolError ? 'tool-failed' : 'unreadable', error);
      }
      metrics.runs.inc({ result: 'ok' });
      if (failing !== null) deps.log.info({ check: 'nvlink' }, 'the NVLinks read again');
      failing = null;
      for (const state of ['active', 'inactive', 'unknown'] as const)
        metrics.links.set(
          { state },
          gpus.reduce((sum, gpu) => sum + gpu.links.filter((link) => link.state === state).length, 0),
        );
      const { problem, down } = problemOf(gpus, memory, config.comparePeers);
      metrics.down.set(down);
      last = problem === null ? [] : [problem];
      return last;
    },
  };
}
