/**
 * The ingest function (`npu-fault function`): the one door into functions/. Its parts have
 * their own doors: app/ (the agent-facing endpoint) and forwarder/ (fan-out to the controllers).
 */
export { functionConfigSchema, type FunctionConfig } from './config.js';
export { createIngestFunction, type FunctionDeps, type IngestFunction } from './function.js';
