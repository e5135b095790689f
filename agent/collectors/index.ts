/**
 * The one door to agent/collectors/: the Collector interface every way of reading the node's
 * accelerators implements, and the tool collectors (`hdc`, `npu-smi`, `nvidia-smi`), each
 * with its own config section. The simulator's collector lives in agent/sim/.
 */
export type { Collector, CollectorDeps, Reading } from './collector.js';
export {
  NvidiaSmiLoop,
  STREAM_FAILURE_REASONS,
  type NvidiaSmiLoopDeps,
  type NvidiaSmiLoopOptions,
  type StreamFailureReason,
  type StreamSample,
} from './nvidia-smi-stream.js';
export { createHdcCollector, hdcCollectorConfigSchema, type HdcCollectorConfig } from './hdc.js';
export {
  NPU_SMI_DETAIL_TYPES,
  createNpuSmiCollector,
  detailArgs,
  detailTargets,
  npuSmiCollectorConfigSchema,
  type DetailTarget,
  type NpuSmiCollectorConfig,
  type NpuSmiDetailType,
} from './npu-smi.js';
export {
  createNvidiaSmiCollector,
  nvidiaSmiArgs,
  nvidiaSmiCollectorConfigSchema,
  readNvidiaQuery,
  type NvidiaSmiCollectorConfig,
} from './nvidia-smi.js';
