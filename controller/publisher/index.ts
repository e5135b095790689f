/**
 * The status publisher: the one door into controller/publisher/ (CONTRACT §5: the status
 * ConfigMap, its write budget, who may write, mirrors).
 *
 * ```ts
 * const client = createKubeConfigMapClient(kc.makeApiClient(k8s.CoreV1Api));
 * // in onStartedLeading(term, signal):
 * const mirrors = createStatusMirrors(
 *   { client, namespaces, leadership: () => elector.leadership(), clock, log, registry },
 *   { term, statusNamespace: config.namespace, config: config.mirrors },
 * );
 * const publisher = createStatusPublisher(
 *   {
 *     client, clock, log, registry,
 *     render: (now, publisher) => engine.document(now, publisher),
 *     leadership: () => elector.leadership(),
 *     onWritten: (written) => { recordLatency(written); mirrors.publish(written); },
 *     onStepDown: (reason) => stopActing(reason),
 *   },
 *   { identity: elector.identity, term, namespace: config.namespace, config: config.publish },
 * );
 * void publisher.start(signal); void mirrors.start(signal);
 * // when a device becomes failed: publisher.requestEarlyWrite();
 * ```
 *
 * Tests of other folders get the in-memory FakeConfigMapClient from `./testing.js`.
 */
export {
  mirrorsConfigSchema,
  parseMirrorsConfig,
  parsePublisherConfig,
  publisherConfigSchema,
  type MirrorsConfig,
  type MirrorsConfigInput,
  type PublisherConfig,
  type PublisherConfigInput,
} from './config.js';
export {
  describeConfigMap,
  type ConfigMapClient,
  type ConfigMapContent,
  type ConfigMapKey,
  type DeletePreconditions,
  type StoredConfigMap,
} from './configmap-client.js';
export { createKubeConfigMapClient } from './kube-configmap-client.js';
export { publisherMetrics, type PublisherMetrics } from './metrics.js';
export {
  createStatusMirrors,
  MIRROR_CLUSTER_ROLE,
  type MirrorNamespaces,
  type MirrorSource,
  type StatusMirrors,
  type StatusMirrorsDeps,
  type StatusMirrorsOptions,
} from './mirrors.js';
export {
  createStatusPublisher,
  type StatusPublisher,
  type StatusPublisherDeps,
  type StatusPublisherOptions,
  type WrittenStatus,
} from './publisher.js';
export { WriteSchedule, type ScheduleSettings } from './schedule.js';
export {
  MANAGED_BY_LABEL,
  STATUS_LABELS,
  documentOf,
  serializeDocument,
  type SerializedDocument,
  type StatusData,
} from './status-data.js';
export {
  ConflictRetriesExhausted,
  StatusWriter,
  type StatusWriterDeps,
  type StatusWriterOptions,
  type WriteOutcome,
} from './status-writer.js';
export { WriteBudget, type BudgetDecision, type WriteBudgetLimits } from './write-budget.js';
