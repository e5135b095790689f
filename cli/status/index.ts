/**
 * `npu-fault status [--watch] [--node X] [-o table|wide|json]`: the published status
 * (ConfigMap `<ns>/npu-fault-status-v3`, key `fault.json`, CONTRACT §5.2) for a person. The
 * one door into cli/status/:
 *
 * - args.ts: the command line (spec, help, options);
 * - read.ts: the ConfigMap through the API (get, and a watch resumed after a 410);
 * - decode.ts: its data as a document (major version first, then the schema);
 * - order.ts, age.ts, table.ts, render.ts: the document as a person reads it, worst first,
 *   with its age; colour only when stdout is a terminal and NO_COLOR is unset;
 * - run.ts: shown once, or followed (`--watch`); command.ts: the subcommand on the real process.
 *
 * Exit 0 shown, 1 missing / unknown major / invalid / the API refused (one line), 1 stale
 * with --fail-stale, 2 bad usage.
 */
export { documentAge, formatAge, isStale, staleWarning } from './age.js';
export { DEFAULT_STALE_AFTER_MS, STATUS, type StatusOptions, type StatusOutput } from './args.js';
export { status } from './command.js';
export { decodeStatus, type Decoded } from './decode.js';
export { compareNatural, nodeStatus, sortDevices, sortNodes } from './order.js';
export { kubeStatusApi, type StatusApi, type StatusConfigMap } from './read.js';
export { renderStatus, summaryLine, unlistedNode, type RenderOptions } from './render.js';
export { REDRAW_MS, runStatus, type StatusDeps } from './run.js';
