/**
 * The `nvidia-smi` collector: `nvidia-smi --query-gpu=<DEFAULT_QUERY_FIELDS>
 * --format=csv,noheader,nounits`, parsed by core/parsers with the same field list (which
 * also marks a GPU listed with nothing readable, as some vGPU guests print, `readable: false`).
 *
 * What the parser alone does not give: a lost GPU. nvidia-smi prints `Unable to determine
 * the device handle for GPU 0000:3B:00.0: GPU is lost` in place of that GPU's row, the rows of
 * the other GPUs around it, and exits non-zero (15). The parser refuses such an output as a
 * whole (ToolError with the lost bus ids); here the good rows are kept and each named GPU is
 * sent with `present: false`, carrying the index, uuid and name it had when last read, so the
 * controller sees the same device go off the bus rather than a new one appear. GPUs the
 * driver counts (`count`) that no line mentions at all are left to the agent's inventory.
 * A reading out of range is sent as null and counted (readings.ts).
 */
import { z } from 'zod';
import { payloadSchema, type Gpu, type Payload } from '../../contracts/index.js';
import { parseWith } from '../../core/errors.js';
import { DEFAULT_QUERY_FIELDS, ToolError, emptyGpu, parseNvidiaCsv } from '../../core/parsers/index.js';
import { ExecToolError, ProbeTimeoutError } from '../probe/index.js';
import type { DeepReadonly } from '../../platform/index.js';
import type { Collector, CollectorDeps, Reading } from './collector.js';
import { NvidiaSmiLoop, type StreamSample } from './nvidia-smi-stream.js';
import {
  createOutOfRangeHandler,
  reportOnceRead,
  type OnOutOfRange,
  type OutOfRangeReading,
} from './readings.js';

/** The `nvidia-smi` collector's settings. */
export const nvidiaSmiCollectorConfigSchema = z.strictObject({
  command: z
    .string()
    .min(1)
    .default('nvidia-smi')
    .describe('nvidia-smi (a name on PATH or a path); run with --query-gpu and csv,noheader,nounits'),
  loop: z
    .boolean()
    .default(true)
    .describe(
      'keep one nvidia-smi running in loop mode (-lms, the sampling interval) rather than start one per sample',
    ),
  loopCooldownSeconds: z
    .number()
    .min(1)
    .max(3600)
    .default(60)
    .describe(
      'after the loop fails (a tool error, a GPU lost, a stall), samples are one-shot runs this long',
    ),
});

/** The `nvidia-smi` collector's settings after defaults (as loadConfig returns them). */
export type NvidiaSmiCollectorConfig = DeepReadonly<z.output<typeof nvidiaSmiCollectorConfigSchema>>;

/** The arguments that query `fields`. */
export function nvidiaSmiArgs(fields: readonly string[]): string[] {
  return [`--query-gpu=${fields.join(',')}`, '--format=csv,noheader,nounits'];
}

/** What identifies a GPU across samples, kept from its last good row. */
interface KnownGpu {
  index: number;
  uuid: string | null;
  name: string;
}

/**
 * Builds the collector. With `config.loop` and `deps.stream`, samples come from one
 * nvidia-smi in loop mode (nvidia-smi-stream.ts), and from a one-shot run whenever the loop
 * cannot give one; else every sample is a one-shot run.
 */
export function createNvidiaSmiCollector(config: NvidiaSmiCollectorConfig, deps: CollectorDeps): Collector {
  // Read once: the parser is given exactly the list the tool was asked for.
  const fields = [...DEFAULT_QUERY_FIELDS];
  const args = nvidiaSmiArgs(fields);
  const known = new Map<string, KnownGpu>();
  const onOutOfRange = createOutOfRangeHandler(deps);
  const remember = (payload: Payload & { family: 'nvidia' }): Payload => {
    for (const gpu of payload.gpus)
      if (gpu.present && gpu.bus_id !== null)
        known.set(gpu.bus_id, { index: gpu.index, uuid: gpu.uuid, name: gpu.name });
    return payload;
  };
  const once = async (signal: AbortSignal): Promise<Reading> => {
    const collectedAt = deps.clock.now();
    const output = await runTolerant(() => deps.exec(config.command, args, { signal }));
    return {
      payload: remember(readNvidiaQuery(output.stdout, output.stderr, fields, known, onOutOfRange)),
      collectedAt,
    };
  };
  const loop =
    config.loop && deps.stream
      ? new NvidiaSmiLoop(
          config.command,
          args,
          fields.length,
          {
            periodMs: deps.periodMs ?? 1000,
            cooldownMs: config.loopCooldownSeconds * 1000,
            // A tool error (a lost GPU, NVML down) ends the loop; other stderr lines are warnings.
            stderrFails: (line) => classifyLine(line) !== null,
          },
          {
            stream: deps.stream,
            clock: deps.clock,
            ...(deps.log ? { log: deps.log } : {}),
            ...(deps.registry ? { registry: deps.registry } : {}),
          },
        )
      : null;
  const next = async (signal: AbortSignal): Promise<StreamSample | null> => {
    try {
      return loop === null ? null : await loop.next(signal);
    } catch (error) {
      // The probe's deadline passed with no complete sample: the loop is stuck. (An abort for
      // a shutdown is not the loop's fault.)
      if (error instanceof ProbeTimeoutError) loop?.fail('stalled', error.message);
      throw error;
    }
  };
  const read = async (signal: AbortSignal): Promise<Reading> => {
    const sample = await next(signal);
    if (sample === null) return once(signal);
    try {
      return {
        payload: remember(readNvidiaQuery(sample.text, '', fields, known, onOutOfRange)),
        collectedAt: sample.collectedAt,
      };
    } catch (error) {
      // Rows the loop printed that do not read: the one-shot run's careful reading decides.
      loop?.fail('unreadable', error instanceof Error ? error.message : String(error));
      return once(signal);
    }
  };
  return {
    name: 'nvidia-smi',
    family: 'nvidia',
    read,
    collect: async (signal) => (await read(signal)).payload,
    close: () => loop?.close(),
  };
}

/**
 * The tool's outputs. A non-zero exit is the run's failure, except when the outputs name a
 * lost GPU: then they are what nvidia-smi could read of the others.
 */
async function runTolerant(run: () => Promise<string>): Promise<{ stdout: string; stderr: string }> {
  try {
    return { stdout: await run(), stderr: '' };
  } catch (error) {
    if (error instanceof ExecToolError && error.kind === 'exit') {
      const lines = [...splitLines(error.stdout), ...splitLines(error.stderr)];
      if (lines.some((line) => classifyLine(line)?.lost !== undefined))
        return { stdout: error.stdout, stderr: error.stderr };
    }
    throw error;
  }
}

function splitLines(text: string): string[] {
  return text.split('\n').filter((line) => line.trim() !== '');
}

/** What a line that is not a row is: a GPU named as lost, or a failure naming none. */
type ToolLine = { lost: string; fatal?: undefined } | { lost?: undefined; fatal: ToolError };

/**
 * Asks the parser's own tool-error check about one line: the bus id of a GPU it names as
 * lost, a tool failure naming no GPU (NVML not loaded), or null for any other line (a row).
 */
function classifyLine(line: string): ToolLine | null {
  try {
    parseNvidiaCsv(line, DEFAULT_QUERY_FIELDS);
  } catch (error) {
    if (error instanceof ToolError) {
      const bus = error.lostBusIds[0];
      return bus === undefined ? { fatal: error } : { lost: bus };
    }
  }
  return null;
}

/** One line of the output: a GPU's row, or the message naming a lost GPU. */
type Entry = { row: string; lost?: undefined } | { row?: undefined; lost: string };

/**
 * Reads a `--query-gpu` noheader output of `fields` into the nvidia payload: rows parsed by
 * core/parsers, lost GPUs (named on stdout or stderr) added with `present: false` and their
 * last known identity from `known`. Readings out of range are null, told to `onOutOfRange`
 * once the output is read (not when it is refused). Pure. Throws as the parser does, and the
 * ToolError of a failure that names no GPU.
 */
export function readNvidiaQuery(
  stdout: string,
  stderr: string,
  fields: readonly string[],
  known: ReadonlyMap<string, KnownGpu> = new Map(),
  onOutOfRange?: OnOutOfRange,
): Payload & { family: 'nvidia' } {
  return reportOnceRead(onOutOfRange, (report) => readQuery({ stdout, stderr }, fields, known, report));
}

function readQuery(
  output: { stdout: string; stderr: string },
  fields: readonly string[],
  known: ReadonlyMap<string, KnownGpu>,
  onOutOfRange: OnOutOfRange | undefined,
): Payload & { family: 'nvidia' } {
  const { stdout, stderr } = output;
  // The usual case, once a second: rows only, nothing on stderr. One parse of the whole
  // output (which refuses any tool-error line) gives the same payload as the line-by-line
  // reading below, which parses every line once more on its own.
  if (stderr.trim() === '') {
    // What the whole reports counts only when it is the reading: held until then.
    const held: OutOfRangeReading[] = [];
    const whole = tryParse(stdout, fields, (reading) => held.push(reading));
    if (whole !== null) {
      if (onOutOfRange) for (const reading of held) onOutOfRange(reading);
      whole.gpus.sort((a, b) => a.index - b.index);
      return parseWith(payloadSchema, whole, 'payload') as Payload & { family: 'nvidia' };
    }
  }
  const entries: Entry[] = [];
  const lines = [
    ...splitLines(stdout).map((text) => ({ text, stderr: false })),
    ...splitLines(stderr).map((text) => ({ text, stderr: true })),
  ];
  for (const line of lines) {
    const kind = classifyLine(line.text);
    if (kind?.fatal) throw kind.fatal;
    if (kind?.lost !== undefined) entries.push({ lost: kind.lost });
    // stderr lines that are not tool errors (warnings) are not rows.
    else if (!line.stderr) entries.push({ row: line.text });
  }
  const rows = entries.flatMap((entry) => (entry.row === undefined ? [] : [entry.row]));
  const lost = entries.length - rows.length;
  // `count` (the driver's GPU count) counts GPUs no row lists, the lost ones among them: the
  // rows are read as what they are, and the GPUs missing from them are told by the lines that
  // name them (below) and by the agent's inventory (installed GPUs no row lists).
  const parsed =
    rows.length === 0
      ? { family: 'nvidia' as const, gpus: [] }
      : parseNvidiaCsv(lost === 0 ? stdout : rows.join('\n'), fields, {
          allowMissingGpus: true,
          onOutOfRange,
        }).payload;
  const gpus = parsed.gpus;
  addLostGpus(gpus, entries, known);
  return parseWith(payloadSchema, { ...parsed, gpus }, 'payload') as Payload & { family: 'nvidia' };
}

/** The payload of an output of rows only; null when any line is not a row (the careful path decides). */
function tryParse(
  stdout: string,
  fields: readonly string[],
  onOutOfRange: OnOutOfRange,
): { family: 'nvidia'; gpus: Gpu[] } | null {
  try {
    return parseNvidiaCsv(stdout, fields, { allowMissingGpus: true, onOutOfRange }).payload;
  } catch {
    return null;
  }
}

/** A GPU off the bus: every metric unknown. */
function lostGpu(index: number, busId: string, identity: KnownGpu | undefined): Gpu {
  return {
    ...emptyGpu(index),
    uuid: identity?.uuid ?? null,
    bus_id: busId,
    name: identity?.name ?? '',
    present: false,
  };
}

/**
 * Adds each lost GPU once, unless a row has its bus id. Its index: the one it had when last
 * read, else its place among the output's lines (nvidia-smi prints GPUs in index order, the
 * error in the lost GPU's place), else the next free one.
 */
function addLostGpus(gpus: Gpu[], entries: readonly Entry[], known: ReadonlyMap<string, KnownGpu>): void {
  const taken = new Set(gpus.map((gpu) => gpu.index));
  const seen = new Set(gpus.flatMap((gpu) => (gpu.bus_id === null ? [] : [gpu.bus_id])));
  entries.forEach((entry, position) => {
    if (entry.lost === undefined || seen.has(entry.lost)) return;
    seen.add(entry.lost);
    const identity = known.get(entry.lost);
    let index = identity?.index ?? position;
    if (taken.has(index)) index = Math.max(-1, ...taken) + 1;
    taken.add(index);
    gpus.push(lostGpu(index, entry.lost, identity));
  });
  gpus.sort((a, b) => a.index - b.index);
}
