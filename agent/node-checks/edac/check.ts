/**
 * The host memory ECC check: reads the EDAC counters every round and raises
 * `host-memory-ecc` for an uncorrectable error (held for holdSeconds) or a storm of
 * correctable ones (tracker.ts). A node without EDAC (no driver for its memory controller,
 * a virtual machine) raises nothing: one info line says so and `edac_available` is 0.
 */
import type { Logger, Registry } from '../../../platform/index.js';
import type { NodeCheck, NodeProblem } from '../check.js';
import { FailureSpells } from '../failure-spells.js';
import { lastingProblems } from '../lasting-problems.js';
import { nodeFileReader, type FileReader } from '../file-reader.js';
import type { EdacCheckConfig } from './config.js';
import { edacMetrics } from './metrics.js';
import { readEdac, type EdacReading } from './sysfs.js';
import { EdacTracker, type EdacEvent } from './tracker.js';

/** What the host memory ECC check is built with. */
export interface EdacCheckDeps {
  log: Logger;
  registry: Registry;
  /** Reads sysfs (default: node:fs). */
  files?: FileReader;
}

/** Builds the host memory ECC check. Disabled, it reads nothing and raises nothing. */
export function createEdacCheck(config: EdacCheckConfig, deps: EdacCheckDeps): NodeCheck {
  const files = deps.files ?? nodeFileReader;
  const log = deps.log.child({ check: 'edac' });
  const metrics = edacMetrics(deps.registry);
  const spells = new FailureSpells(log);
  const tracker = new EdacTracker({
    correctablePerHour: config.correctablePerHour,
    holdMs: config.holdSeconds * 1000,
  });
  const rounds = lastingProblems('edac', spells);

  return {
    name: 'edac',
    intervalMs: config.intervalMs,
    async run(now: number): Promise<readonly NodeProblem[]> {
      if (!config.enabled) return [];
      return rounds(async () => {
        let reading: EdacReading | undefined;
        try {
          reading = await readEdac(files, config.sysfsRoot);
          spells.succeed('edac', 'EDAC reads again');
        } catch (error) {
          metrics.readErrors.inc();
          spells.fail('edac', { error: (error as Error).message }, 'cannot read EDAC; the last counts stand');
        }
        const verdict = tracker.update(now, reading);
        for (const event of verdict.events) logEvent(log, event);
        if (verdict.available !== undefined) metrics.available.set(verdict.available ? 1 : 0);
        metrics.controllers.set(verdict.controllers);
        if (verdict.newErrors.correctable > 0)
          metrics.errors.inc({ type: 'correctable' }, verdict.newErrors.correctable);
        if (verdict.newErrors.uncorrectable > 0)
          metrics.errors.inc({ type: 'uncorrectable' }, verdict.newErrors.uncorrectable);
        return verdict.problems;
      });
    },
  };
}

function logEvent(log: Logger, event: EdacEvent): void {
  const fields = { controller: event.controller, detail: event.detail };
  switch (event.what) {
    case 'available':
      log.info('EDAC memory controllers found: host memory ECC is watched');
      return;
    case 'unavailable':
      log.info('no EDAC memory controller on this node: host memory ECC is not watched');
      return;
    case 'history':
      log.info(fields, 'memory errors counted before the agent started: history, not a problem');
      return;
    case 'reset':
    case 'appeared':
      log.info(fields, event.what === 'reset' ? 'EDAC counts reset' : 'memory controller appeared');
      return;
    case 'disappeared':
      log.warn(fields, 'memory controller no longer listed; its last counts are kept');
      return;
    case 'uncorrectable':
      log.error(fields, 'uncorrectable host memory error');
      return;
    case 'correctable-storm':
      log.warn(fields, 'correctable host memory errors above the hourly threshold');
      return;
    case 'correctable-calm':
      log.info(fields, 'correctable host memory errors back under the hourly threshold');
  }
}
