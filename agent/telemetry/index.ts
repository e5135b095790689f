/**
 * The agent's device telemetry as Prometheus series (issue 28): readings of the last
 * snapshot and the published status, per device, on the agent's /metrics. The one door into
 * agent/telemetry/.
 *
 * ```ts
 * createDeviceMetrics(registry, () => deviceTelemetry(node, lastSnapshot, feed.current()));
 * ```
 */
export {
  deviceTelemetry,
  type DeviceLabels,
  type DeviceTelemetry,
  type PublishedView,
} from './device-telemetry.js';
export { createDeviceMetrics, deviceMetricNames } from './metrics.js';
