/**
 * The filesystems check: every round, the host's mount table and each watched path's stat
 * and statfs (through hostRoot); the tracker (tracker.ts) says which file systems are
 * read-only when they must not be, or full. Raises `filesystem-readonly` and
 * `filesystem-full`, one problem each, naming the paths, the device and the mount point.
 *
 * Why the host's mount table: a pod's own (/proc/self/mountinfo) lists its hostPath mounts
 * with the pod's options, so one mounted readOnly reads `ro` there however the host's file
 * system is; /proc/1/mountinfo, with hostPID, is the host's init's view. The super block's
 * options (ro after errors=remount-ro) are the same in every table.
 */
import { join } from 'node:path';
import type { Logger, Registry } from '../../../platform/index.js';
import type { NodeCheck, NodeProblem } from '../check.js';
import { FailureSpells } from '../failure-spells.js';
import { lastingProblems } from '../lasting-problems.js';
import { nodeFileReader, type FileReader } from '../file-reader.js';
import type { FilesystemsCheckConfig } from './config.js';
import { PathInspector, nodeFilesystemProbe, type FilesystemProbe } from './inspect.js';
import { filesystemMetrics } from './metrics.js';
import { parseMountInfo, type MountEntry } from './mountinfo.js';
import { FilesystemTracker, type FilesystemEvent, type PathObservation } from './tracker.js';

/** The largest mount table read: a node with a thousand pods' mounts stays well under it. */
const MAX_MOUNT_TABLE_BYTES = 8 * 1024 * 1024;

/** What the filesystems check is built with. */
export interface FilesystemsCheckDeps {
  log: Logger;
  registry: Registry;
  /** Reads the mount table (default: node:fs). */
  files?: FileReader;
  /** stat and statfs (default: node:fs). */
  probe?: FilesystemProbe;
}

/** Builds the filesystems check. Disabled, it reads nothing and raises nothing. */
export function createFilesystemsCheck(
  config: FilesystemsCheckConfig,
  deps: FilesystemsCheckDeps,
): NodeCheck {
  const files = deps.files ?? nodeFileReader;
  const log = deps.log.child({ check: 'filesystems' });
  const metrics = filesystemMetrics(deps.registry);
  const spells = new FailureSpells(log);
  const inspector = new PathInspector(deps.probe ?? nodeFilesystemProbe, config.statTimeoutMs);
  const tracker = new FilesystemTracker({
    fullPercent: config.fullPercent,
    minFreeBytes: config.minFreeBytes,
  });
  const paths = [...new Set([...config.paths, ...config.modelCachePaths, ...config.writablePaths])];
  const rounds = lastingProblems('filesystems', spells);

  const readMounts = async (): Promise<MountEntry[] | undefined> => {
    try {
      const table = parseMountInfo(await files.readText(config.mountTable, MAX_MOUNT_TABLE_BYTES));
      if (table.garbage > 0) metrics.readErrors.inc({ source: 'garbage' }, table.garbage);
      if (table.entries.length === 0) throw new Error('no mountinfo line in it');
      spells.succeed('mounts', 'mount table read again');
      return [...table.entries];
    } catch (error) {
      metrics.readErrors.inc({ source: 'mounts' });
      spells.fail(
        'mounts',
        { path: config.mountTable, error: (error as Error).message },
        'cannot read the mount table; read-only states stay as last known',
      );
      return undefined;
    }
  };

  const observe = async (path: string, signal: AbortSignal): Promise<PathObservation> => {
    const agentPath = join(config.hostRoot, path);
    const look = await inspector.look(agentPath, signal);
    if (look.status === 'error') {
      metrics.readErrors.inc({ source: 'stat' });
      spells.fail(
        `stat ${path}`,
        { path: agentPath, error: look.error },
        'cannot look at a watched path; its last state stands',
      );
    } else if (look.status === 'hung') {
      if (look.timedOut) metrics.timeouts.inc();
      spells.fail(
        `stat ${path}`,
        { path: agentPath },
        'a watched path does not answer (hung file system?); skipped until it does',
      );
    } else spells.succeed(`stat ${path}`, 'watched path answers again');
    return { path, agentPath, mustBeWritable: config.writablePaths.includes(path), look };
  };

  return {
    name: 'filesystems',
    intervalMs: config.intervalMs,
    async run(_now: number, signal: AbortSignal): Promise<readonly NodeProblem[]> {
      if (!config.enabled) return [];
      return rounds(async () => {
        const mounts = await readMounts();
        const observations = await Promise.all(paths.map((path) => observe(path, signal)));
        if (signal.aborted) return undefined;
        const verdict = tracker.update(mounts, observations);
        for (const event of verdict.events) logEvent(log, event);
        metrics.readOnly.set(verdict.readOnly);
        metrics.full.set(verdict.full);
        metrics.missing.set(observations.filter((o) => o.look.status === 'missing').length);
        metrics.waiting.set(inspector.waiting);
        return verdict.problems;
      });
    },
  };
}

function logEvent(log: Logger, event: FilesystemEvent): void {
  const fields = { subject: event.subject, detail: event.detail };
  switch (event.what) {
    case 'missing':
      log.info(fields, 'watched path absent on the host: not checked');
      return;
    case 'found':
      log.info(fields, 'watched path present again');
      return;
    case 'readonly':
      log.warn(fields, 'file system read-only');
      return;
    case 'full':
      log.warn(fields, 'file system full');
      return;
    default:
      log.info(
        fields,
        event.what === 'writable' ? 'file system writable again' : 'file system no longer full',
      );
  }
}
