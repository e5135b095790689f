/**
 * The network check (the one door to agent/node-checks/network/): TCP connection attempts to
 * the default gateway, the API server and configured endpoints; `misses` missed in a row by
 * any is `network-unreachable`. Fakes for tests are in testing.ts.
 */
export { MAX_NETWORK_TARGETS, networkCheckConfigSchema, type NetworkCheckConfig } from './config.js';
export {
  CONNECT_OUTCOMES,
  createTcpConnector,
  type ConnectOutcome,
  type ConnectResult,
  type Connector,
} from './connector.js';
export { PROBE_OUTCOMES, TABLE_ERROR_REASONS, type ProbeOutcome, type TableErrorReason } from './metrics.js';
export { apiServerTarget, createNetworkCheck, type NetworkCheckDeps } from './network-check.js';
export { readHead, type ReadHead } from './read-head.js';
export {
  TARGET_KINDS,
  formatEndpoint,
  parseEndpoint,
  type Endpoint,
  type Target,
  type TargetKind,
} from './targets.js';
