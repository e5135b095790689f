/**
 * The controller's watches, the one door into controller/watch/: a generic list+watch loop
 * that caches only the fields used (watchdog, re-list after 410 Gone, backoff), and on it the
 * Node cache, the set of mirror namespaces and the rules ConfigMap's hot reload.
 *
 * ```ts
 * const clients = createKubeWatchClients(kc, { namespace: config.namespace });
 * const deps = { clock, log, registry };
 * const nodes = createNodeWatch({ ...deps, client: clients.nodes }, { config: config.nodes, callbacks: { onChange } });
 * const mirrors = createMirrorNamespaceWatch({ ...deps, client: clients.mirrorNamespaces }, { onChange: publisher.setMirrors });
 * const rules = createRulesConfigMapWatch(
 *   { ...deps, client: clients.rulesConfigMap },
 *   { namespace: config.namespace, fallback, onRules: engine.setRules, onInvalid: events.rulesRefused },
 * );
 * // run them with the other Runnables; await nodes.whenSynced() before trusting the cache.
 * ```
 *
 * The generic list+watch loop these run on is platform/k8s/watch/ (its FakeListWatchClient in
 * platform/k8s/watch/testing.ts).
 */
export {
  DEFAULT_ACCELERATOR_RESOURCES,
  nodeWatchConfigSchema,
  parseNodeWatchConfig,
  type NodeWatchConfig,
  type NodeWatchConfigInput,
} from './config.js';
export {
  REMEDIATION_CONFIGMAP,
  createKubeWatchClients,
  type KubeWatchClients,
} from './kube-watch-clients.js';
export {
  LabelSelectorError,
  matchesLabels,
  parseLabelSelector,
  type LabelSelector,
  type SelectorTerm,
} from './label-selector.js';
export {
  MIRROR_LABEL,
  MIRROR_LABEL_SELECTOR,
  createMirrorNamespaceWatch,
  mirrorNamespaceOf,
  type MirrorNamespaceWatch,
  type MirrorNamespaceWatchOptions,
} from './namespaces.js';
export {
  CACHED_LABEL_PREFIX,
  LATCHED_ANNOTATION,
  NPU_HEALTHY_CONDITION,
  acceleratorRule,
  createNodeWatch,
  isNonZeroQuantity,
  nodeFromObject,
  sameConditions,
  type AcceleratorRule,
  type CachedCondition,
  type CachedNode,
  type NodeChange,
  type NodeWatch,
  type NodeWatchCallbacks,
  type NodeWatchOptions,
} from './nodes.js';
export {
  RULES_CONFIGMAP,
  RULES_KEYS,
  createRulesConfigMapWatch,
  describeRulesSource,
  rulesDataOf,
  type RulesConfigMapData,
  type RulesConfigMapWatch,
  type RulesConfigMapWatchOptions,
  type RulesKey,
  type RulesSource,
} from './rules-configmap.js';
