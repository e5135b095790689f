/**
 * The pipeline benchmark's proof of no loss: the leader's recorded observations
 * (`--record-observations`) replayed through `npu-fault replay` (the same engine code), and its
 * transitions compared one for one with those an API watcher saw published (bench/failover.ts).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  compareTransitions,
  parseReplay,
  type PublishedTransitions,
  type Step,
  type Transitions,
} from '../failover.js';
import type { LosslessCheck } from './result.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);

/** Replays `journal` and compares its transitions with the published ones. */
export async function losslessCheck(
  journal: string,
  published: PublishedTransitions,
  endAt: number,
): Promise<LosslessCheck> {
  const { stdout } = await run(process.execPath, [join(ROOT, 'bin/npu-fault.js'), 'replay', journal], {
    maxBuffer: 512 * 1024 * 1024,
  });
  const replayed = parseReplay(stdout);
  const comparison = compareTransitions(published.steps, replayed, { publishIntervalMs: 1000, endAt });
  const count = (t: Map<string, unknown[]>): number => [...t.values()].reduce((n, l) => n + l.length, 0);
  return {
    published: count(published.steps),
    replayed: count(replayed),
    lost: comparison.lost,
    duplicated: comparison.duplicated,
    merged: comparison.merged,
    lostByStatus: comparison.lostByStatus,
    duplicatedByStatus: comparison.duplicatedByStatus,
    details: [
      ...(comparison.lost + comparison.duplicated > 0
        ? [
            `lost by status ${JSON.stringify(comparison.lostByStatus)}, duplicated by status ${JSON.stringify(comparison.duplicatedByStatus)}`,
          ]
        : []),
      ...(comparison.pendingAtEnd
        ? [`${comparison.pendingAtEnd} pending at the end (not yet published)`]
        : []),
      ...comparison.examples,
      ...traces(comparison.examples, published.steps, replayed),
    ],
  };
}

/** Both sides of the first two devices with a mismatch, for the report: `status@time(seen)`. */
function traces(examples: readonly string[], published: Transitions, replayed: Transitions): string[] {
  const keys = [...new Set(examples.map((e) => e.split(' ')[1] ?? ''))].slice(0, 2);
  const time = (ms: number): string => new Date(ms).toISOString().slice(11, 23);
  const side = (steps: readonly Step[] | undefined): string =>
    (steps ?? [])
      .map((s) => `${s.status}@${time(s.at)}${s.seenAt === undefined ? '' : `(seen ${time(s.seenAt)})`}`)
      .join(' ');
  return keys.map(
    (k) => `trace ${k}: published ${side(published.get(k))}; replayed ${side(replayed.get(k))}`,
  );
}
