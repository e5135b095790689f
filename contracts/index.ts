/**
 * The contracts' only public door: the zod schemas (and their types) of everything that
 * crosses a boundary: the snapshot an agent sends (snapshot.ts), the normalised device the
 * engine consumes (device.ts), the published status document (published.ts), the rules
 * file (rules.ts), the reasons it publishes (reasons.ts) and the observations API between the ingest function and the controllers
 * (observations.ts); how every reader takes a node's health from the document
 * (published-health.ts); and the hot path's reader of valid snapshots, held to the snapshot
 * schema's result (snapshot-fast-path.ts). JSON Schemas of the same, for other languages, are in json-schema/.
 * The controller's marks on Nodes and ConfigMaps that operators and the CLI read or write:
 * clear-annotation.ts, latched-annotation.ts, remediation-record.ts, remediation-breaker.ts.
 */
export * from './agent-local.js';
export * from './clear-annotation.js';
export * from './decoded.js';
export * from './device.js';
export * from './explain.js';
export * from './ingest.js';
export * from './latched-annotation.js';
export * from './observations.js';
export * from './published.js';
export * from './published-health.js';
export * from './reasons.js';
export * from './remediation-breaker.js';
export * from './remediation-record.js';
export * from './rules.js';
export * from './device-ids.js';
export * from './snapshot.js';
export * from './snapshot-fast-path.js';
