/**
 * What the collectors do with a number a tool printed outside what hardware can report
 * (READING_BOUNDS: 65535 °C for a sensor npu-smi could not read, a power of -1 W): the parsers
 * read it as null (unreadable), so one glitching sensor never gets the whole snapshot
 * refused, and it is counted here, by the device field it was printed for, so that a sensor
 * read as unreadable is seen: `npu_fault_agent_readings_out_of_range_total{field}`.
 */
import { Counter } from 'prom-client';
import { READING_FIELDS, type ReadingField } from '../../contracts/index.js';
import type { OnOutOfRange, OutOfRangeReading } from '../../core/parsers/index.js';
import { metricPrefix, type Logger, type Registry } from '../../platform/index.js';

export type { OnOutOfRange, OutOfRangeReading } from '../../core/parsers/index.js';

/** The counter's name. */
export const READINGS_OUT_OF_RANGE_METRIC = `${metricPrefix('agent')}readings_out_of_range_total`;

/** Where the collectors' out-of-range readings go. */
export interface ReadingsDeps {
  registry?: Registry | undefined;
  log?: Logger | undefined;
}

/**
 * The collectors' handler of out-of-range readings: counts each by its field (every field's
 * series starts at 0) and logs the first of each field at warn, the rest at debug (a glitching
 * sensor is glitching every sample). Undefined when there is neither registry nor log.
 */
export function createOutOfRangeHandler(deps: ReadingsDeps): OnOutOfRange | undefined {
  const { registry, log } = deps;
  if (!registry && !log) return undefined;
  const counter = registry ? outOfRangeCounter(registry) : undefined;
  const warned = new Set<ReadingField>();
  return ({ field, value }) => {
    counter?.inc({ field });
    const fields = { field, value: String(value) };
    const message = 'a tool printed a reading outside what hardware can report; sent as unreadable (null)';
    if (warned.has(field)) log?.debug(fields, message);
    else {
      warned.add(field);
      log?.warn(fields, message);
    }
  };
}

/** The registry's counter, made on first use (the collectors of one agent share it). */
function outOfRangeCounter(registry: Registry): Counter<'field'> {
  const existing = registry.getSingleMetric(READINGS_OUT_OF_RANGE_METRIC);
  if (existing) return existing as Counter<'field'>;
  const counter = new Counter({
    name: READINGS_OUT_OF_RANGE_METRIC,
    help: 'Readings a tool printed outside what hardware can report (READING_BOUNDS), sent as null (unreadable), by device field',
    labelNames: ['field'],
    registers: [registry],
  });
  for (const field of Object.keys(READING_FIELDS)) counter.inc({ field }, 0);
  return counter;
}

/**
 * `parse(report)`, with what it reports held back until it returns and then told to
 * `onOutOfRange`: an output refused midway (and read again another way) counts nothing.
 */
export function reportOnceRead<T>(
  onOutOfRange: OnOutOfRange | undefined,
  parse: (report: OnOutOfRange | undefined) => T,
): T {
  if (onOutOfRange === undefined) return parse(undefined);
  const held: OutOfRangeReading[] = [];
  const result = parse((reading) => held.push(reading));
  for (const reading of held) onOutOfRange(reading);
  return result;
}
