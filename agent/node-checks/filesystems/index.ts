/**
 * The filesystems check (the one door to agent/node-checks/filesystems/): the host's root,
 * container runtime, kubelet and model cache file systems, read-only or full; raises
 * `filesystem-readonly` and `filesystem-full`. Fakes for tests are in testing.ts.
 */
export { createFilesystemsCheck, type FilesystemsCheckDeps } from './check.js';
export { filesystemsCheckConfigSchema, type FilesystemsCheckConfig } from './config.js';
export type { FilesystemProbe, FsUsage } from './inspect.js';
