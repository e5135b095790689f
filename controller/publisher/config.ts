/**
 * The publisher's settings (CONTRACT §5.4 and §5.5, every number of the write budget), as zod
 * schemas the controller's config nests under `publish` and `mirrors`, so they arrive as
 * `--publish-tick-min-ms`, `NPU_FAULT_MIRRORS_INTERVAL_MS`, … like every setting.
 */
import { z } from 'zod';
import { STATUS_CONFIGMAP_NAME } from '../../contracts/index.js';
import { parseConfigSection } from '../../platform/index.js';

const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const positiveInt = z.number().int().positive();

/** Status writes: schedule, heartbeat, budget, conflicts. Defaults are the contract's. */
export const publisherConfigSchema = z
  .strictObject({
    name: z
      .string()
      .regex(DNS_SUBDOMAIN, 'must be a DNS subdomain (an object name)')
      .default(STATUS_CONFIGMAP_NAME)
      .describe('name of the status ConfigMap (in the controller namespace) and of its mirrors'),
    tickMinMs: positiveInt.default(1000).describe('shortest wait between regular writes'),
    tickMaxMs: positiveInt
      .default(1200)
      .describe(
        'longest wait between regular writes (the tick is uniform in [min, max]: replicas drift apart)',
      ),
    earlyMinGapMs: z
      .number()
      .int()
      .nonnegative()
      .default(150)
      .describe('an early write (a device became failed) goes no sooner than this after the last write'),
    heartbeatMs: z
      .number()
      .int()
      .nonnegative()
      .default(1000)
      .describe('when nothing but the timestamp changed, write only this often (moves timestamp)'),
    maxWritesPerSecond: positiveInt.default(4).describe('never more writes than this in any 1 s window'),
    maxBytesPerSecond: positiveInt
      .default(256 * 1024)
      .describe('never more bytes than this per second, averaged over bytesWindowSeconds'),
    bytesWindowSeconds: positiveInt
      .default(60)
      .describe(
        'the trailing window the byte ceiling averages over (etcd keeps every revision until compaction)',
      ),
    maxConflictRetries: z
      .number()
      .int()
      .nonnegative()
      .default(5)
      .describe('409s retried within one write before it waits for the next tick'),
    requestTimeoutMs: positiveInt.default(10_000).describe('one API request is abandoned after this long'),
  })
  .superRefine((config, context) => {
    if (config.tickMaxMs < config.tickMinMs) {
      context.addIssue({
        code: 'custom',
        path: ['tickMaxMs'],
        message: `must be at least tickMinMs (${config.tickMinMs})`,
      });
    }
    // An early write pulls the next write forward; one allowed later than a tick would push it back.
    if (config.earlyMinGapMs > config.tickMinMs) {
      context.addIssue({
        code: 'custom',
        path: ['earlyMinGapMs'],
        message: `must not exceed tickMinMs (${config.tickMinMs})`,
      });
    }
  });

/** Mirror writes into labelled namespaces (CONTRACT §5.5). */
export const mirrorsConfigSchema = z.strictObject({
  intervalMs: positiveInt
    .default(10_000)
    .describe('a changed document is copied into a namespace at most this often'),
  heartbeatMs: positiveInt
    .default(60_000)
    .describe(
      'when only the timestamp moved, a mirror is rewritten this often (a mounted copy refreshes about once a minute anyway)',
    ),
  requestTimeoutMs: positiveInt.default(10_000).describe('one API request is abandoned after this long'),
});

/** Publisher settings as given (every field optional). */
export type PublisherConfigInput = z.input<typeof publisherConfigSchema>;
/** Publisher settings with defaults filled in and checked. */
export type PublisherConfig = z.output<typeof publisherConfigSchema>;
/** Mirror settings as given (every field optional). */
export type MirrorsConfigInput = z.input<typeof mirrorsConfigSchema>;
/** Mirror settings with defaults filled in and checked. */
export type MirrorsConfig = z.output<typeof mirrorsConfigSchema>;

/** Fills defaults and checks; throws ConfigError with one `publish.<field>: message` line per problem. */
export function parsePublisherConfig(input: PublisherConfigInput = {}): PublisherConfig {
  return parseConfigSection(publisherConfigSchema, input, 'publish');
}

/** Fills defaults and checks; throws ConfigError with one `mirrors.<field>: message` line per problem. */
export function parseMirrorsConfig(input: MirrorsConfigInput = {}): MirrorsConfig {
  return parseConfigSection(mirrorsConfigSchema, input, 'mirrors');
}
