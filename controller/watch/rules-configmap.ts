/**
 * Hot reload of the detection rules from the ConfigMap `<namespace>/npu-fault-rules` (key
 * `rules.yaml`, or `rules.json`), watched through a field selector on its name, the only
 * ConfigMap the controller's Role lets it read there.
 *
 * - **Valid** text (core/rules) becomes the rules in force: `onRules(rules, source)`.
 * - **Invalid** text never replaces valid rules: the rules in force stay, `onInvalid(message)`
 *   gets the one-line reason (`ai-infra/npu-fault-rules/rules.yaml:7: high_temp.threshold_c:
 *   …`; the controller turns it into a Warning Event), it is logged, and
 *   `rules_reloads_total{result="invalid"}` counts it. Both keys at once, or neither, is
 *   invalid too (which one was meant is unknown).
 * - **Deleted** (or never created): the `fallback` rules (the controller's --rules file or
 *   the defaults) are in force. They are in force from the start, so a ConfigMap absent at
 *   start calls nothing; a deletion calls `onRules(fallback)` once, when other rules were in
 *   force.
 * - **Unchanged** text (a new resourceVersion from a label edit, a re-list) reloads nothing
 *   and reports nothing again.
 */
import { reloadRules, type Rules } from '../../core/rules/index.js';
import { Counter } from 'prom-client';
import { metricPrefix, type Logger, type Registry, type Runnable } from '../../platform/index.js';
import {
  createWatchLoop,
  type RawObject,
  type WatchLoopDeps,
  type WatchLoopOptions,
} from '../../platform/k8s/index.js';

/** The rules ConfigMap's name (the Role's resourceNames holds it). */
export const RULES_CONFIGMAP = 'npu-fault-rules';
/** The data keys read, in the format their name says (both are read as YAML, a superset of JSON). */
export const RULES_KEYS = ['rules.yaml', 'rules.json'] as const;
/** One of RULES_KEYS. */
export type RulesKey = (typeof RULES_KEYS)[number];

/** Where the rules in force come from. */
export type RulesSource =
  | {
      readonly kind: 'configmap';
      readonly namespace: string;
      readonly name: string;
      readonly key: RulesKey;
      readonly resourceVersion: string;
    }
  | { readonly kind: 'fallback' };

/** `ai-infra/npu-fault-rules/rules.yaml@1234`, or `fallback`. */
export function describeRulesSource(source: RulesSource): string {
  return source.kind === 'fallback'
    ? 'fallback'
    : `${source.namespace}/${source.name}/${source.key}@${source.resourceVersion}`;
}

/** How the rules watch runs. */
export interface RulesConfigMapWatchOptions {
  /** The controller's namespace (ai-infra in production). */
  namespace: string;
  /** The ConfigMap's name (default npu-fault-rules). */
  name?: string;
  /** The rules in force without a valid ConfigMap: the --rules file's, or the defaults. */
  fallback: Rules;
  /** New rules are in force (synchronously, from the watch; a throw is logged). */
  onRules(rules: Rules, source: RulesSource): void;
  /** An edit was refused; `message` is one line saying where and why. The old rules stay. */
  onInvalid(message: string): void;
  /** Loop tuning (watchdog, server timeout, backoff, metrics component). */
  loop?: Pick<
    WatchLoopOptions<RulesConfigMapData>,
    'watchdogMs' | 'minWatchTimeoutSeconds' | 'initialBackoffMs' | 'maxBackoffMs' | 'metricsComponent'
  >;
}

/** The rules ConfigMap as cached: its version and the two keys read. */
export interface RulesConfigMapData {
  readonly resourceVersion: string;
  readonly yaml: string | undefined;
  readonly json: string | undefined;
}

/** The running rules watch. */
export interface RulesConfigMapWatch extends Runnable {
  synced(): boolean;
  whenSynced(): Promise<void>;
  /** The rules in force and where they come from. */
  current(): { readonly rules: Rules; readonly source: RulesSource };
}

/**
 * Builds the watch on a client of the one ConfigMap
 * (`createKubeWatchClients(...).rulesConfigMap`).
 */
export function createRulesConfigMapWatch(
  deps: WatchLoopDeps,
  options: RulesConfigMapWatchOptions,
): RulesConfigMapWatch {
  const name = options.name ?? RULES_CONFIGMAP;
  const reloads = rulesReloadsMetric(deps.registry, options.loop?.metricsComponent);
  for (const result of ['ok', 'invalid']) reloads.inc({ result }, 0);
  const reloader = new RulesReloader({
    options,
    name,
    log: deps.log.child({ rules: `${options.namespace}/${name}` }),
    count: (result) => reloads.inc({ result }),
  });
  const loop = createWatchLoop<RulesConfigMapData>(deps, {
    ...options.loop,
    resource: 'rules-configmap',
    transform: (raw) => rulesDataOf(raw, name),
    handlers: {
      onAdd: (_key, data) => reloader.seen(data),
      onUpdate: (_key, data) => reloader.seen(data),
      onDelete: () => reloader.gone(),
    },
  });
  return {
    name: loop.name,
    start: (signal) => loop.start(signal),
    synced: () => loop.synced(),
    whenSynced: () => loop.whenSynced(),
    current: () => reloader.inForce,
  };
}

/** Decides what each version of the ConfigMap means for the rules in force. */
class RulesReloader {
  inForce: { rules: Rules; source: RulesSource };
  readonly #options: RulesConfigMapWatchOptions;
  readonly #name: string;
  /** `namespace/name`, for messages. */
  readonly #where: string;
  readonly #log: Logger;
  readonly #count: (result: 'ok' | 'invalid') => void;
  /** What was last judged (text or refusal), so the same content is judged once. */
  #lastJudged: string | undefined;
  #lastVersion: string | undefined;

  constructor(parts: {
    options: RulesConfigMapWatchOptions;
    name: string;
    log: Logger;
    count: (result: 'ok' | 'invalid') => void;
  }) {
    this.#options = parts.options;
    this.#name = parts.name;
    this.#where = `${parts.options.namespace}/${parts.name}`;
    this.#log = parts.log;
    this.#count = parts.count;
    this.inForce = { rules: parts.options.fallback, source: { kind: 'fallback' } };
  }

  /** A version of the ConfigMap was seen. */
  seen(data: RulesConfigMapData): void {
    if (data.resourceVersion !== '' && data.resourceVersion === this.#lastVersion) return;
    this.#lastVersion = data.resourceVersion;
    const picked = pickKey(data, this.#where);
    const judged = 'error' in picked ? `error\0${picked.error}` : `${picked.key}\0${picked.text}`;
    if (judged === this.#lastJudged) return;
    this.#lastJudged = judged;
    if ('error' in picked) {
      this.#invalid(picked.error);
      return;
    }
    const result = reloadRules(this.inForce.rules, picked.text);
    if (result.error) {
      this.#invalid(result.error.describe(`${this.#where}/${picked.key}`));
      return;
    }
    const source: RulesSource = {
      kind: 'configmap',
      namespace: this.#options.namespace,
      name: this.#name,
      key: picked.key,
      resourceVersion: data.resourceVersion,
    };
    this.#apply(result.rules, source);
  }

  /** The ConfigMap is gone: the fallback is in force again (reported when it was not). */
  gone(): void {
    this.#lastJudged = undefined;
    this.#lastVersion = undefined;
    if (this.inForce.source.kind === 'fallback') return;
    this.#apply(this.#options.fallback, { kind: 'fallback' });
  }

  #apply(rules: Rules, source: RulesSource): void {
    this.inForce = { rules, source };
    this.#count('ok');
    this.#log.info({ source: describeRulesSource(source) }, 'rules reloaded');
    try {
      this.#options.onRules(rules, source);
    } catch (error) {
      this.#log.error({ err: error }, 'onRules failed');
    }
  }

  #invalid(message: string): void {
    this.#count('invalid');
    this.#log.warn(
      { reason: message, inForce: describeRulesSource(this.inForce.source) },
      'rules refused; keeping the rules in force',
    );
    try {
      this.#options.onInvalid(message);
    } catch (error) {
      this.#log.error({ err: error }, 'onInvalid failed');
    }
  }
}

/** The one key holding the rules, or why there is none. */
function pickKey(
  data: RulesConfigMapData,
  where: string,
): { key: RulesKey; text: string } | { error: string } {
  if (data.yaml !== undefined && data.json !== undefined)
    return { error: `${where}: has both rules.yaml and rules.json; keep one` };
  if (data.yaml !== undefined) return { key: 'rules.yaml', text: data.yaml };
  if (data.json !== undefined) return { key: 'rules.json', text: data.json };
  return { error: `${where}: has no rules.yaml or rules.json key` };
}

/** The cached value of the rules ConfigMap (only the two keys), or undefined for another object. */
export function rulesDataOf(raw: RawObject, name: string): RulesConfigMapData | undefined {
  if (raw.metadata?.name !== name) return undefined;
  const data = raw.data && typeof raw.data === 'object' ? (raw.data as Record<string, unknown>) : {};
  const text = (key: RulesKey): string | undefined => {
    const value = Object.hasOwn(data, key) ? data[key] : undefined;
    return typeof value === 'string' ? value : undefined;
  };
  return {
    resourceVersion: typeof raw.metadata.resourceVersion === 'string' ? raw.metadata.resourceVersion : '',
    yaml: text('rules.yaml'),
    json: text('rules.json'),
  };
}

/** `rules_reloads_total{result}` of `registry`, created on first use (one per registry). */
function rulesReloadsMetric(registry: Registry, component = 'controller'): Counter<'result'> {
  const name = `${metricPrefix(component)}rules_reloads_total`;
  const existing = registry.getSingleMetric(name);
  if (existing instanceof Counter) return existing as Counter<'result'>;
  return new Counter({
    name,
    help: 'Reloads of the rules ConfigMap: ok (new rules in force, the fallback after a deletion included) or invalid (refused; the rules in force kept)',
    labelNames: ['result'],
    registers: [registry],
  });
}
