/**
 * promtool for the integration tests: located (or built once, minutes on a cold machine) by
 * hack/build-promtool.sh, then run on rules, rule unit tests and metric expositions.
 *
 * Without promtool and without Go, `promtool()` rejects with the script's one-line error
 * saying what to install, so the tests that need it fail rather than skip (the precedent of
 * the control plane, which fails the same way without Go).
 */
import { execFile } from 'node:child_process';
import { findPromtool } from '../../hack/promtool.js';

/** A cold build of promtool on a 2-core machine takes about 7 minutes; a warm cache, none. */
export const PROMTOOL_BUILD_TIMEOUT_MS = 20 * 60_000;

let located: Promise<string> | undefined;

/** The promtool binary's path, found or built on the first call of the test file. */
export async function promtool(): Promise<string> {
  located ??= findPromtool((line) => process.stderr.write(`${line}\n`));
  return await located;
}

/** What one promtool run printed, and its exit code (promtool exits 1 or 3 on findings). */
export interface PromtoolResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs promtool with `args` (and `input` on stdin); resolves whatever its exit code. */
export async function runPromtool(args: string[], input?: string): Promise<PromtoolResult> {
  const binary = await promtool();
  return await new Promise((resolve, reject) => {
    const child = execFile(binary, args, { maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : undefined;
      if (code === undefined) reject(error ?? new Error('promtool: no exit code'));
      else resolve({ code, stdout, stderr });
    });
    child.stdin?.end(input ?? '');
  });
}

/** One problem `promtool check metrics` found: the metric family and what is wrong with it. */
export interface MetricsFinding {
  metric: string;
  problem: string;
}

/**
 * Lints a Prometheus text exposition with `promtool check metrics` (naming, units, suffixes,
 * help texts) and returns its findings; [] when it is clean. Throws when promtool could not
 * parse the text at all, naming its error.
 */
export async function checkMetrics(exposition: string): Promise<MetricsFinding[]> {
  const { code, stdout, stderr } = await runPromtool(['check', 'metrics'], exposition);
  const lines = `${stdout}\n${stderr}`
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  // Exit 3: lint findings, one "<metric> <problem>" line each; anything else is a failure.
  if (code !== 0 && code !== 3)
    throw new Error(`promtool check metrics failed (exit ${code}): ${lines.join(' | ')}`);
  return lines.map((line) => {
    const space = line.indexOf(' ');
    return space < 0
      ? { metric: '', problem: line }
      : { metric: line.slice(0, space), problem: line.slice(space + 1) };
  });
}
