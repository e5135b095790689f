/**
 * The `hdc` collector: runs the seed's health tool (`hdc health -j`, or any configured command
 * that prints a CONTRACT §1 payload, or a whole snapshot, as JSON) and returns the payload.
 * The envelope (node, seq, boot id, time) is the sampler's: one a tool prints is ignored.
 * A reading out of range is sent as null and counted (readings.ts).
 */
import { z } from 'zod';
import type { Payload } from '../../contracts/index.js';
import { parseHdcJson } from '../../core/parsers/index.js';
import type { DeepReadonly } from '../../platform/index.js';
import type { Collector, CollectorDeps } from './collector.js';
import { createOutOfRangeHandler, reportOnceRead } from './readings.js';

/** The `hdc` collector's settings. */
export const hdcCollectorConfigSchema = z.strictObject({
  command: z
    .string()
    .min(1)
    .default('hdc')
    .describe('the health tool (a name on PATH or a path) printing a CONTRACT §1 payload as JSON'),
  args: z.array(z.string()).default(['health', '-j']).describe('its arguments'),
});

/** The `hdc` collector's settings after defaults (as loadConfig returns them). */
export type HdcCollectorConfig = DeepReadonly<z.output<typeof hdcCollectorConfigSchema>>;

/**
 * Envelope fields parseHdcJson wraps a bare payload in; only the payload is kept, so none of
 * them reaches a snapshot.
 */
const PLACEHOLDER_ENVELOPE = { node: 'node', seq: 0, bootId: '', collector: 'hdc' } as const;

/** Builds the collector. */
export function createHdcCollector(config: HdcCollectorConfig, deps: CollectorDeps): Collector {
  const args = [...config.args];
  const onOutOfRange = createOutOfRangeHandler(deps);
  return {
    name: 'hdc',
    async collect(signal: AbortSignal): Promise<Payload> {
      const stdout = await deps.exec(config.command, args, { signal });
      const collectedAt = new Date(deps.clock.now()).toISOString();
      // Validated by the parser: a bare payload inside the placeholder envelope, or a snapshot.
      return reportOnceRead(
        onOutOfRange,
        (report) =>
          parseHdcJson(stdout, { ...PLACEHOLDER_ENVELOPE, collectedAt }, { onOutOfRange: report }).payload,
      );
    },
  };
}
