/**
 * The kernel check's settings (agent config section `kernel` of the node checks): how long
 * each kernel-log problem holds after its last message, and what makes an OOM storm.
 */
import { z } from 'zod';
import type { DeepReadonly } from '../../../platform/index.js';

/** Longest hold that can be set: a week. */
const MAX_HOLD_SECONDS = 7 * 24 * 3600;

/** A hold time in seconds, from 1 s to a week. */
const hold = (seconds: number, what: string): z.ZodDefault<z.ZodNumber> =>
  z
    .number()
    .int()
    .min(1)
    .max(MAX_HOLD_SECONDS)
    .default(seconds)
    .describe(`${what} holds this long after the last such message, in seconds`);

/** The kernel check's settings. */
export const kernelCheckConfigSchema = z.strictObject({
  enabled: z
    .boolean()
    .default(true)
    .describe(
      'raise node problems from the kernel’s own messages (hung tasks, lockups, OOM storms, filesystem errors, machine checks); needs the kernel-log follower (events.kmsg)',
    ),
  intervalMs: z
    .number()
    .int()
    .min(100)
    .max(60_000)
    .default(1000)
    .describe('how often the held problems are looked at (no I/O: the messages arrive as events)'),
  holdSeconds: z
    .strictObject({
      hungTask: hold(600, 'kernel-hung-task'),
      softLockup: hold(600, 'kernel-soft-lockup (soft and hard lockups)'),
      machineCheck: hold(3600, 'kernel-machine-check (uncorrected machine checks, memory failures)'),
      filesystemError: hold(3600, 'filesystem-error (ext4, jbd2 and XFS errors)'),
      filesystemReadOnly: hold(
        3600,
        'filesystem-error for a remount read-only after errors (the filesystems check raises filesystem-readonly for the filesystems that matter)',
      ),
    })
    .prefault({}),
  oomKills: z
    .number()
    .int()
    .min(1)
    .max(1000)
    .default(5)
    .describe(
      'this many kills by the node’s OOM killer within oomWindowSeconds make an oom-kill-storm (a cgroup reaching its own limit does not count)',
    ),
  oomWindowSeconds: z
    .number()
    .int()
    .min(10)
    .max(24 * 3600)
    .default(300)
    .describe('the window the OOM kills are counted in, in seconds'),
});

/** The kernel check's settings after defaults. */
export type KernelCheckConfig = DeepReadonly<z.output<typeof kernelCheckConfigSchema>>;
