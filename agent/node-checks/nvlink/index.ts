/**
 * The one door to the NVLink check: `nvidia-smi nvlink --status` every interval, and
 * `nvlink-down` while a GPU has a link down that was up, or that every other GPU has up.
 * Its config section is `nvlinkCheckConfigSchema`; whether a node runs it,
 * `nvlinkCheckWanted`; the parser, core/parsers nvidia-smi/nvlink.ts; the rules,
 * docs/node-checks.md. Metrics (`npu_fault_agent_`): nvlink_check_runs_total{result},
 * nvlink_links{state}, nvlink_links_down.
 */
export { nvlinkCheckConfigSchema, nvlinkCheckWanted, type NvlinkCheckConfig } from './config.js';
export { NvlinkMemory, findDownLinks, type DownLinks } from './links.js';
export {
  NVLINK_RUN_RESULTS,
  createNvlinkCheck,
  type NvlinkCheckDeps,
  type NvlinkRunResult,
} from './nvlink-check.js';
