/**
 * The `npu-smi` collector: the `npu-smi info` table every sample, completed by the per-device
 * `npu-smi info -t <type> -i <npu> [-c <chip>]` records (mergeNpuSmiDetails), which alone carry
 * fault codes, ECC counters and the 310P card power. Those are one tool run per device and
 * type (16 to 48 runs on an 8-NPU node), so they are read on a slower period
 * (detailsIntervalSeconds) and the last ones are reused between rounds.
 *
 * A round of detail runs goes `detailsConcurrency` at a time. Each record is kept as soon as
 * it arrives, so a round cut by the probe's timeout is not lost: the next sample goes on with
 * the devices not yet read. A `-t` run that fails keeps the device's previous record (one
 * failed run neither clears a fault code nor invents one) until it is detailsMaxAgeSeconds
 * old; then the device falls back to what the table says.
 *
 * Which records: `health` and `ecc` for every chip (`-c <chip>`); for 310P cards also the
 * card-level `power` and `common` (the MCU's card power; chip temperatures). A 910B table
 * already has each chip's power and temperature, so `power`/`common` are not run for it.
 *
 * A reading out of range (in the table or a record) is sent as null and counted (readings.ts).
 */
import { Counter } from 'prom-client';
import { z } from 'zod';
import type { Payload } from '../../contracts/index.js';
import {
  mergeNpuSmiDetails,
  parseNpuSmiInfo,
  parseNpuSmiTable,
  type NpuSmiDetail,
  type NpuSmiTablePayload,
} from '../../core/parsers/index.js';
import { describeError, metricPrefix, type DeepReadonly, type Registry } from '../../platform/index.js';
import type { Collector, CollectorDeps } from './collector.js';
import { createOutOfRangeHandler, reportOnceRead, type OnOutOfRange } from './readings.js';

/** The `-t` record types the collector can run. */
export const NPU_SMI_DETAIL_TYPES = ['health', 'ecc', 'power', 'common'] as const;
/** One of NPU_SMI_DETAIL_TYPES. */
export type NpuSmiDetailType = (typeof NPU_SMI_DETAIL_TYPES)[number];

/** The `npu-smi` collector's settings. */
export const npuSmiCollectorConfigSchema = z.strictObject({
  command: z.string().min(1).default('npu-smi').describe('npu-smi (a name on PATH or a path)'),
  detailsIntervalSeconds: z
    .number()
    .nonnegative()
    .default(10)
    .describe('how often the per-device `npu-smi info -t` records are read (0: every sample)'),
  detailTypes: z
    .array(z.enum(NPU_SMI_DETAIL_TYPES))
    .default(['health', 'ecc', 'power'])
    .describe('the -t records read: health (fault codes), ecc, power and common (310P card power)'),
  detailsConcurrency: z.number().int().min(1).max(16).default(4).describe('-t runs at a time'),
  detailsMaxAgeSeconds: z
    .number()
    .positive()
    .default(60)
    .describe('a record whose -t run keeps failing is dropped when this old'),
});

/** The `npu-smi` collector's settings after defaults (as loadConfig returns them). */
export type NpuSmiCollectorConfig = DeepReadonly<z.output<typeof npuSmiCollectorConfigSchema>>;

/** One `-t` run: the record type and the device it asks about. */
export interface DetailTarget {
  type: NpuSmiDetailType;
  npu: number;
  /** The `-c` chip; undefined for card-level records. */
  chip?: number;
}

/** Types run per chip; the others are card-level (310P only). */
const PER_CHIP: ReadonlySet<NpuSmiDetailType> = new Set(['health', 'ecc']);

/** The `-t` runs a table calls for, in table order. */
export function detailTargets(table: NpuSmiTablePayload, types: readonly NpuSmiDetailType[]): DetailTarget[] {
  const targets: DetailTarget[] = [];
  const chipTypes = types.filter((type) => PER_CHIP.has(type));
  if (table.family === '910B') {
    for (const npu of table.npus)
      for (const type of chipTypes) targets.push({ type, npu: npu.npu, chip: npu.chip });
    return targets;
  }
  for (const card of table.cards) {
    for (const chip of card.chips)
      for (const type of chipTypes) targets.push({ type, npu: card.card, chip: chip.chip });
    for (const type of types) if (!PER_CHIP.has(type)) targets.push({ type, npu: card.card });
  }
  return targets;
}

/** `npu-smi` arguments of one `-t` run. */
export function detailArgs(target: DetailTarget): string[] {
  const chip = target.chip === undefined ? [] : ['-c', String(target.chip)];
  return ['info', '-t', target.type, '-i', String(target.npu), ...chip];
}

function keyOf(target: DetailTarget): string {
  return `${target.type}/${target.npu}/${target.chip ?? '-'}`;
}

/** The counter of failed `npu-smi info -t` runs, one per registry. */
function detailFailureCounter(registry: Registry): Counter<'type'> {
  const name = `${metricPrefix('agent')}npu_smi_detail_failures_total`;
  const existing = registry.getSingleMetric(name);
  if (existing) return existing as Counter<'type'>;
  return new Counter({
    name,
    help: 'Failed `npu-smi info -t <type>` runs (the last record is kept), by type',
    labelNames: ['type'],
    registers: [registry],
  });
}

/** A record kept, with the monotonic time it was read. */
interface KeptDetail {
  detail: NpuSmiDetail;
  readAt: number;
}

/** Builds the collector. */
export function createNpuSmiCollector(config: NpuSmiCollectorConfig, deps: CollectorDeps): Collector {
  return new NpuSmiCollector(config, deps);
}

class NpuSmiCollector implements Collector {
  readonly name = 'npu-smi';
  readonly #config: NpuSmiCollectorConfig;
  readonly #deps: CollectorDeps;
  readonly #onOutOfRange: OnOutOfRange | undefined;
  readonly #details = new Map<string, KeptDetail>();
  /** Runs still to do in the current round; null between rounds. */
  #pending: DetailTarget[] | null = null;
  /** Monotonic start of the last round; null before the first. */
  #lastRoundAt: number | null = null;
  /**
   * A failing spell of `-t` runs, one for the collector: the first failure warns (naming the
   * record), the others are debug lines and counted, and it ends, said once, with a whole
   * round without a failure, so a flaky record does not warn at every other run.
   */
  #spell = false;
  /** Failures in the round under way. */
  #roundFailures = 0;
  readonly #detailFailures: Counter<'type'> | undefined;

  constructor(config: NpuSmiCollectorConfig, deps: CollectorDeps) {
    this.#config = config;
    this.#deps = deps;
    this.#onOutOfRange = createOutOfRangeHandler(deps);
    this.#detailFailures = deps.registry ? detailFailureCounter(deps.registry) : undefined;
  }

  async collect(signal: AbortSignal): Promise<Payload> {
    const text = await this.#deps.exec(this.#config.command, ['info'], { signal });
    const table = reportOnceRead(this.#onOutOfRange, (report) =>
      parseNpuSmiTable(text, { onOutOfRange: report }),
    );
    const targets = detailTargets(table, this.#config.detailTypes);
    const now = this.#deps.clock.monotonic();
    if (this.#pending === null && this.#roundDue(now)) {
      this.#pending = [...targets];
      this.#lastRoundAt = now;
      this.#roundFailures = 0;
    }
    if (this.#pending !== null) await this.#runPending(signal);
    return mergeNpuSmiDetails(table, this.#currentDetails(targets));
  }

  #roundDue(now: number): boolean {
    return (
      this.#lastRoundAt === null || now - this.#lastRoundAt >= this.#config.detailsIntervalSeconds * 1000
    );
  }

  /** Runs the round's pending targets, a few at a time; rejects when the signal aborts. */
  async #runPending(signal: AbortSignal): Promise<void> {
    const pending = this.#pending ?? [];
    const worker = async (): Promise<void> => {
      for (let target = pending.shift(); target !== undefined; target = pending.shift()) {
        if (signal.aborted) {
          // Not read: back in the queue for the next sample.
          pending.unshift(target);
          return;
        }
        await this.#runOne(target, signal);
      }
    };
    const workers = Array.from({ length: this.#config.detailsConcurrency }, () => worker());
    await Promise.all(workers);
    signal.throwIfAborted();
    this.#pending = null;
    if (this.#spell && this.#roundFailures === 0) {
      this.#spell = false;
      this.#deps.log?.info({}, 'npu-smi info -t recovered: a whole round read without a failure');
    }
  }

  async #runOne(target: DetailTarget, signal: AbortSignal): Promise<void> {
    try {
      const text = await this.#deps.exec(this.#config.command, detailArgs(target), { signal });
      const detail: NpuSmiDetail = {
        npu: target.npu,
        ...(target.chip === undefined ? {} : { chip: target.chip }),
        record: reportOnceRead(this.#onOutOfRange, (report) =>
          parseNpuSmiInfo(text, { onOutOfRange: report }),
        ),
      };
      this.#details.set(keyOf(target), { detail, readAt: this.#deps.clock.monotonic() });
    } catch (error) {
      if (signal.aborted) {
        // Cut by the deadline, not failed: read again in the next sample.
        this.#pending?.push(target);
        return;
      }
      this.#detailFailures?.inc({ type: target.type });
      this.#roundFailures++;
      // Once per failing spell at warn, not at every run (thousands an hour); counted always.
      const first = !this.#spell;
      this.#spell = true;
      this.#deps.log?.[first ? 'warn' : 'debug'](
        { npu: target.npu, chip: target.chip, type: target.type, error: describeError(error) },
        'npu-smi info -t failed; keeping the last record',
      );
    }
  }

  /** The kept records of the devices in this table, young enough to use. */
  #currentDetails(targets: readonly DetailTarget[]): NpuSmiDetail[] {
    const now = this.#deps.clock.monotonic();
    const wanted = new Set(targets.map(keyOf));
    const maxAge = this.#config.detailsMaxAgeSeconds * 1000;
    const out: NpuSmiDetail[] = [];
    for (const [key, kept] of this.#details) {
      // A device gone from the table, or a record too old: dropped for good.
      if (!wanted.has(key) || now - kept.readAt > maxAge) this.#details.delete(key);
      else out.push(kept.detail);
    }
    return out;
  }
}
