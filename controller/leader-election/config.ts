/**
 * The leader-election settings (controller-runtime's LeaderElection* options, client-go's
 * defaults), as a zod schema the controller's config nests under `lease`, so they arrive as
 * `--lease-duration-seconds`, `NPU_FAULT_LEASE_RENEW_DEADLINE_SECONDS`, … like every setting.
 */
import { z } from 'zod';
import { parseConfigSection } from '../../platform/index.js';

/**
 * How much a candidate's retry period is stretched at random (client-go's JitterFactor): it
 * waits retryPeriod × (1 + up to 1.2), so candidates that started together drift apart.
 */
export const JITTER_FACTOR = 1.2;

/** The Lease the controllers contend for, unless configured otherwise. */
export const DEFAULT_LEASE = { namespace: 'ai-infra', name: 'npu-fault-controller' } as const;

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Leader-election settings; every field has client-go's default. */
export const leaderElectionConfigSchema = z
  .strictObject({
    namespace: z
      .string()
      .regex(DNS_LABEL, 'must be a DNS label (a namespace name)')
      .default(DEFAULT_LEASE.namespace)
      .describe('namespace of the Lease'),
    name: z
      .string()
      .regex(DNS_SUBDOMAIN, 'must be a DNS subdomain (an object name)')
      .default(DEFAULT_LEASE.name)
      .describe('name of the Lease'),
    // Whole seconds: the Lease stores leaseDurationSeconds as an integer.
    durationSeconds: z
      .number()
      .int()
      .positive()
      .default(15)
      .describe('how long a lease stays valid after its holder last changed it, judged by the observer'),
    renewDeadlineSeconds: z
      .number()
      .positive()
      .default(10)
      .describe('a leader that has not renewed for this long stops leading at once'),
    retryPeriodSeconds: z
      .number()
      .positive()
      .default(2)
      .describe('how often the leader renews, and candidates try to acquire (jittered)'),
    releaseOnCancel: z
      .boolean()
      .default(true)
      .describe('on a clean shutdown, release the Lease so a standby takes over at its next retry'),
  })
  .superRefine((config, context) => {
    // The leader gives up (renew deadline) before anyone may take over (lease duration): the
    // gap is the tolerance for clocks running at different rates and for write latency.
    if (config.renewDeadlineSeconds >= config.durationSeconds) {
      context.addIssue({
        code: 'custom',
        path: ['renewDeadlineSeconds'],
        message: `must be less than durationSeconds (${config.durationSeconds})`,
      });
    }
    // A leader gets at least one retry within the deadline, even with jitter.
    if (config.renewDeadlineSeconds <= JITTER_FACTOR * config.retryPeriodSeconds) {
      context.addIssue({
        code: 'custom',
        path: ['renewDeadlineSeconds'],
        message: `must be more than ${JITTER_FACTOR} × retryPeriodSeconds (${JITTER_FACTOR * config.retryPeriodSeconds})`,
      });
    }
  });

/** Leader-election settings as given (every field optional). */
export type LeaderElectionConfigInput = z.input<typeof leaderElectionConfigSchema>;
/** Leader-election settings with defaults filled in and checked. */
export type LeaderElectionConfig = z.output<typeof leaderElectionConfigSchema>;

/** Fills defaults and checks; throws ConfigError with one `lease.<field>: message` line per problem. */
export function parseLeaderElectionConfig(input: LeaderElectionConfigInput = {}): LeaderElectionConfig {
  return parseConfigSection(leaderElectionConfigSchema, input, 'lease');
}
