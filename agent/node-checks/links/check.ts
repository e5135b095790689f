/**
 * The links check: NIC and RDMA links from sysfs every round, Ascend RoCE ports through
 * hccn_tool every hccnIntervalMs where it is installed; the tracker (tracker.ts) says which
 * are down, gone or flapping. Raises `nic-link-down` and `rdma-port-down` (an NPU's RoCE
 * port too), one problem each, whose message names every link and what was read.
 *
 * A listing that fails (class/net unreadable) leaves that kind's links in their last state
 * and is counted and logged once per failing spell; so is a failing hccn_tool.
 */
import type { Logger, Registry } from '../../../platform/index.js';
import { createExecTool, type ExecTool } from '../../probe/index.js';
import type { NodeCheck, NodeProblem } from '../check.js';
import { FailureSpells } from '../failure-spells.js';
import { lastingProblems } from '../lasting-problems.js';
import { nodeFileReader, type FileReader } from '../file-reader.js';
import type { LinksCheckConfig } from './config.js';
import { npusFromDeviceNodes, readHccnLinks, type HccnAnswer } from './hccn.js';
import { linkMetrics, type LinkSourceName } from './metrics.js';
import { readNics, readRdmaPorts } from './sysfs.js';
import {
  LINK_KINDS,
  LinkTracker,
  type LinkEvent,
  type LinkKind,
  type LinkReading,
  type LinkSource,
} from './tracker.js';

/** What the links check is built with. */
export interface LinksCheckDeps {
  log: Logger;
  registry: Registry;
  /** Runs hccn_tool (default: agent/probe's createExecTool(); pass the agent's, built with its toolLibraryPath). */
  exec?: ExecTool;
  /** Reads sysfs and lists the device nodes (default: node:fs). */
  files?: FileReader;
}

/** Builds the links check. Disabled, it reads nothing and raises nothing. */
export function createLinksCheck(config: LinksCheckConfig, deps: LinksCheckDeps): NodeCheck {
  const files = deps.files ?? nodeFileReader;
  const exec = deps.exec ?? createExecTool();
  const log = deps.log.child({ check: 'links' });
  const metrics = linkMetrics(deps.registry);
  const spells = new FailureSpells(log);
  const hccnConfigured = Array.from({ length: config.hccnDeviceCount }, (_, n) => `npu${n}`);
  const tracker = new LinkTracker({
    configured: { nic: config.interfaces, rdma: config.rdmaPorts, hccn: hccnConfigured },
    flapThreshold: config.flapThreshold,
    flapWindowMs: config.flapWindowSeconds * 1000,
  });
  let lastHccnRound = Number.NEGATIVE_INFINITY;
  let hccnInstalled: boolean | undefined;
  const rounds = lastingProblems('links', spells);

  /** What `read` gives, or undefined when the source could not be listed (counted, logged once a spell). */
  const readSource = async <T>(source: LinkSourceName, read: () => Promise<T>): Promise<T | undefined> => {
    try {
      const value = await read();
      spells.succeed(source, `links: ${source} listed again`);
      return value;
    } catch (error) {
      metrics.readErrors.inc({ source });
      spells.fail(
        source,
        { error: (error as Error).message },
        `links: cannot list ${source}; its links keep their last state`,
      );
      return undefined;
    }
  };

  const readHccn = async (signal: AbortSignal): Promise<LinkReading[] | undefined> => {
    const installed = await files.exists(config.hccnToolPath, true);
    metrics.hccnInstalled.set(installed ? 1 : 0);
    if (installed !== hccnInstalled)
      log.info(
        { path: config.hccnToolPath },
        installed
          ? 'hccn_tool found: reading NPU RoCE ports'
          : 'hccn_tool not installed: no NPU RoCE port is read',
      );
    hccnInstalled = installed;
    if (!installed) return undefined;
    const npus =
      config.hccnDeviceCount > 0
        ? hccnConfigured.map((_, n) => n)
        : await readSource('devices', () => npusFromDeviceNodes(files, config.hccnDevDir));
    if (npus === undefined) return undefined;
    const answers = await readHccnLinks(npus, {
      exec,
      path: config.hccnToolPath,
      timeoutMs: config.hccnTimeoutMs,
      signal,
    });
    const failed = answers.filter((a) => 'failure' in a);
    for (const answer of failed) metrics.hccnFailures.inc({ failure: answer.failure });
    const first = failed[0];
    if (first === undefined) spells.succeed('hccn_tool', 'hccn_tool answers again');
    else
      spells.fail(
        'hccn_tool',
        { npus: failed.map((a) => a.npu), failure: first.failure, error: first.error },
        'hccn_tool gives no link state: those RoCE ports keep their last known state',
      );
    return answers.map(hccnReading);
  };

  return {
    name: 'links',
    intervalMs: config.intervalMs,
    async run(now: number, signal: AbortSignal): Promise<readonly NodeProblem[]> {
      if (!config.enabled) return [];
      return rounds(async () => {
        const sources: Partial<Record<LinkKind, LinkSource>> = {};
        const selection = { minSpeedMbps: config.minSpeedMbps, ignore: config.ignoreInterfaces };
        const nics = await readSource('net', () => readNics(files, config.sysfsRoot, selection));
        if (nics) sources.nic = { readings: nics, absentIsGone: true };
        const rdma = await readSource('infiniband', () => readRdmaPorts(files, config.sysfsRoot));
        if (rdma) sources.rdma = { readings: rdma, absentIsGone: true };
        // Due after hccnIntervalMs, or at once when the wall clock stepped back past the last round.
        const hccnDue = now - lastHccnRound >= config.hccnIntervalMs || now < lastHccnRound;
        if (config.hccnEnabled && hccnDue && !signal.aborted) {
          lastHccnRound = now;
          const hccn = await readHccn(signal);
          if (hccn && !signal.aborted) sources.hccn = { readings: hccn, absentIsGone: false };
        }
        const verdict = tracker.update(now, sources);
        for (const event of verdict.events) logEvent(log, event);
        for (const kind of LINK_KINDS) {
          metrics.watched.set({ kind }, verdict.watched[kind]);
          metrics.down.set({ kind }, verdict.down[kind]);
          if (verdict.flaps[kind] > 0) metrics.flaps.inc({ kind }, verdict.flaps[kind]);
        }
        return verdict.problems;
      });
    },
  };
}

/** An NPU's answer as a reading: a failed run is a port whose state is unknown this round. */
function hccnReading(answer: HccnAnswer): LinkReading {
  const id = `npu${answer.npu}`;
  if ('status' in answer)
    return {
      id,
      kind: 'hccn',
      up: answer.status === 'UP',
      seen: `hccn_tool: link status ${answer.status}`,
      eligible: true,
    };
  return { id, kind: 'hccn', up: undefined, seen: `hccn_tool failed (${answer.failure})`, eligible: true };
}

function logEvent(log: Logger, event: LinkEvent): void {
  const fields = { link: event.id, kind: event.kind, detail: event.detail };
  switch (event.what) {
    case 'watched':
      log.info(fields, 'link watched');
      return;
    case 'up':
    case 'back':
    case 'steady':
      log.info(
        fields,
        event.what === 'up' ? 'link up' : event.what === 'back' ? 'link back' : 'link no longer flapping',
      );
      return;
    default:
      log.warn(
        fields,
        event.what === 'down' ? 'link down' : event.what === 'gone' ? 'link gone' : 'link flapping',
      );
  }
}
