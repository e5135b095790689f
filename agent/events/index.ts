/**
 * Event-driven detection: sources that report device events as they happen, so the agent
 * sends a snapshot at once rather than at its next sample.
 *
 * - `createKmsgFollower`: the kernel log (/dev/kmsg, or a file or FIFO) for NVIDIA XIDs, PCIe
 *   AER errors and devices leaving the bus (the lines are read by core/parsers' KernelLogScanner),
 *   and, to its `onNodeEvent`, the kernel's node-problem messages (NodeKernelEvent).
 * - `createDeviceNodeWatcher`: device nodes (`/dev/davinciN`, `/dev/nvidiaN`) disappearing.
 *
 * Both are Runnables that never fail: an unreadable source is logged, counted and retried.
 * Metrics (`npu_fault_agent_`): kernel_events_total{kind}, kernel_node_events_total{kind},
 * kmsg_read_errors_total{reason},
 * kmsg_records_skipped_total, kmsg_records_ignored_total{reason}, device_node_removals_total,
 * device_node_watch_errors_total.
 */
export {
  createDeviceNodeWatcher,
  type DeviceNodeWatcherDeps,
  type DeviceNodeWatcherOptions,
} from './device-nodes.js';
export { createKmsgFollower, type KmsgFollowerDeps, type KmsgFollowerOptions } from './kmsg.js';
export { openRecordDevice, type OpenRecordDevice, type RecordDevice } from './kmsg-device.js';
export { LineSplitter, MAX_PENDING_LINE } from './line-splitter.js';
export {
  KMSG_ERROR_REASONS,
  KMSG_IGNORED_REASONS,
  type KmsgErrorReason,
  type KmsgIgnoredReason,
} from './metrics.js';
export {
  DEFAULT_RETRY,
  type EventSource,
  type KernelEvent,
  type NodeKernelEvent,
  type RetryOptions,
} from './types.js';
