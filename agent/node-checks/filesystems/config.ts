/**
 * The filesystems check's settings (agent config section `filesystems`).
 */
import { z } from 'zod';
import type { DeepReadonly } from '../../../platform/index.js';
import { absolutePath } from '../config-fields.js';

const paths = (what: string) => z.array(absolutePath()).max(32).describe(what);

export const filesystemsCheckConfigSchema = z.strictObject({
  enabled: z
    .boolean()
    .default(true)
    .describe('watch the file systems that matter for read-only remounts and full disks'),
  intervalMs: z
    .number()
    .int()
    .min(1000)
    .max(3_600_000)
    .default(30000)
    .describe('time between two reads of the mount table and the file systems'),
  hostRoot: absolutePath()
    .default('/proc/1/root')
    .describe(
      "where the agent sees the host's paths: /proc/1/root (the host's root through its init, with hostPID and CAP_SYS_PTRACE, as the privileged DaemonSet has), a hostPath mount such as /host, or / outside a container",
    ),
  mountTable: absolutePath()
    .default('/proc/1/mountinfo')
    .describe(
      "the host's mount table (mountinfo format): /proc/1/mountinfo with hostPID; the pod's own (/proc/self/mountinfo) shows its hostPath mounts' options, readOnly ones as ro",
    ),
  paths: paths('host paths whose file systems must not go read-only or full').default([
    '/',
    '/var/lib/containerd',
    '/var/lib/kubelet',
  ]),
  modelCachePaths: paths('host paths of model caches, watched as paths are (one absent is skipped)').default(
    [],
  ),
  writablePaths: paths(
    'host paths whose file systems must be writable from the first read (others are a problem only when they turn read-only after being seen writable)',
  ).default(['/var/lib/kubelet', '/var/lib/containerd']),
  fullPercent: z
    .number()
    .min(1)
    .max(100)
    .default(95)
    .describe('a writable file system with this much of its space (or of its inodes) in use is full'),
  minFreeBytes: z
    .number()
    .int()
    .min(0)
    .default(0)
    .describe(
      'a writable file system with less space free than this (for unprivileged users) is full too; 0: off',
    ),
  statTimeoutMs: z
    .number()
    .int()
    .min(100)
    .max(60000)
    .default(5000)
    .describe(
      'a path whose stat or statfs has not answered within this (a hung NFS mount) is skipped until it answers, and counted',
    ),
});

/** The filesystems check's settings after defaults. */
export type FilesystemsCheckConfig = DeepReadonly<z.output<typeof filesystemsCheckConfigSchema>>;
