/**
 * Ascend NPUs' RoCE ports, read with Huawei's `hccn_tool -i <npu> -link -g`, which prints one
 * line, `link status: UP` or `link status: DOWN` (testing.ts holds the samples and their
 * sources). The ports sit on the NPUs, so sysfs on the host never shows them.
 *
 * Runs go through agent/probe's ExecTool: each in its own process group, killed with it at
 * the timeout, its output capped. A run that fails (not startable, a non-zero exit, a
 * timeout, output that is not the one line) is that NPU's port state unknown this round:
 * counted by kind, never a problem by itself (a broken tool or a driver being upgraded says
 * nothing of the links), and the port keeps its last known state.
 */
import { ParseError, excerpt } from '../../../core/errors.js';
import { errorCode } from '../../../platform/index.js';
import { ExecToolError, type ExecTool } from '../../probe/index.js';
import type { FileReader } from '../file-reader.js';

/** Why an hccn_tool run gave no state: ExecTool's kinds, and `garbage` (not the expected line). */
export const HCCN_FAILURE_KINDS = ['spawn', 'exit', 'aborted', 'output', 'garbage'] as const;
export type HccnFailureKind = (typeof HCCN_FAILURE_KINDS)[number];

/** The most bytes one run may print: the answer is one short line. */
const MAX_OUTPUT_BYTES = 16 * 1024;
/** Runs at once: a 16-NPU node is read in four waves. */
const CONCURRENCY = 4;
/** The most NPUs read from the device nodes. */
const MAX_DEVICES = 64;

/** `UP` or `DOWN` from `hccn_tool -i <n> -link -g`'s output; a ParseError for anything else. */
export function parseHccnLinkStatus(output: string): 'UP' | 'DOWN' {
  const states = new Set<string>();
  for (const line of output.split('\n')) {
    const match = /^\s*link status\s*:\s*(\S+)\s*$/i.exec(line);
    if (match) states.add((match[1] as string).toUpperCase());
  }
  const [state] = states;
  if (states.size === 1 && (state === 'UP' || state === 'DOWN')) return state;
  if (states.size > 1)
    throw new ParseError(`conflicting link status lines: ${[...states].join(', ').slice(0, 40)}`);
  throw new ParseError(
    state === undefined
      ? `no "link status:" line in ${JSON.stringify(excerpt(output.trim(), 60))}`
      : `link status is ${JSON.stringify(excerpt(state, 20))}, not UP or DOWN`,
  );
}

/** The NPUs of `/dev/davinci<N>` in `devDir`, in order; none when the directory cannot be listed. */
export async function npusFromDeviceNodes(files: FileReader, devDir: string): Promise<number[]> {
  let names: string[];
  try {
    names = await files.list(devDir, 65536);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return [];
    throw error;
  }
  const ids = names.flatMap((name) => {
    const match = /^davinci(\d{1,3})$/.exec(name);
    return match ? [Number(match[1])] : [];
  });
  return ids.sort((a, b) => a - b).slice(0, MAX_DEVICES);
}

/** One NPU's answer: its port's state, or why there is none. */
export type HccnAnswer =
  | { readonly npu: number; readonly status: 'UP' | 'DOWN' }
  | { readonly npu: number; readonly failure: HccnFailureKind; readonly error: string };

/** How to run the tool. */
export interface HccnRunOptions {
  readonly exec: ExecTool;
  readonly path: string;
  /** The whole round's time: runs still going then are killed, NPUs not reached get no answer. */
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
}

/**
 * Runs `hccn_tool -i <npu> -link -g` for each NPU, four at a time, within one deadline for the
 * round (a check round never waits on hung tools longer than that); an answer for each NPU
 * reached, in order.
 */
export async function readHccnLinks(npus: readonly number[], options: HccnRunOptions): Promise<HccnAnswer[]> {
  const answers: HccnAnswer[] = new Array<HccnAnswer>(npus.length);
  const signal = AbortSignal.any([options.signal, AbortSignal.timeout(options.timeoutMs)]);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < npus.length && !signal.aborted) {
      const index = next++;
      answers[index] = await readOne(npus[index] as number, options.exec, options.path, signal);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, npus.length) }, worker));
  return answers.filter((a) => a !== undefined);
}

async function readOne(npu: number, exec: ExecTool, path: string, signal: AbortSignal): Promise<HccnAnswer> {
  let output: string;
  try {
    output = await exec(path, ['-i', String(npu), '-link', '-g'], {
      signal,
      maxOutputBytes: MAX_OUTPUT_BYTES,
    });
  } catch (error) {
    const failure = error instanceof ExecToolError ? error.kind : 'spawn';
    return { npu, failure, error: excerpt((error as Error).message ?? String(error), 200) };
  }
  try {
    return { npu, status: parseHccnLinkStatus(output) };
  } catch (error) {
    return { npu, failure: 'garbage', error: (error as Error).message };
  }
}
