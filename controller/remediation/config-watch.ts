/**
 * Hot reload of the remediation settings from the ConfigMap `<namespace>/npu-fault-remediation`
 * (key `remediation.yaml`: the `remediation` section, YAML or JSON), watched by name, the only
 * other ConfigMap the controller's Role lets it read.
 *
 * - Valid text replaces the settings in force, whole (fields it leaves out take the defaults,
 *   not the flags': one place says what is in force).
 * - Invalid text never replaces valid settings: `onInvalid(message)` gets one line naming the
 *   key, line and field; `remediation_config_reloads_total{result="invalid"}` counts it.
 * - Deleted or absent: the settings of the controller's flags, environment and --config file.
 */
import { Counter } from 'prom-client';
import {
  metricPrefix,
  parseConfigFile,
  type Logger,
  type Registry,
  type Runnable,
} from '../../platform/index.js';
import { createWatchLoop, type RawObject, type WatchLoopDeps } from '../../platform/k8s/index.js';
import { remediationConfigSchema, type RemediationConfig } from './config.js';
import { REMEDIATION_CONFIGMAP } from '../watch/index.js';

export { REMEDIATION_CONFIGMAP };
/** The settings' data key (YAML, a superset of JSON). */
export const REMEDIATION_CONFIG_KEY = 'remediation.yaml';

/** The running watch. */
export interface RemediationConfigWatch extends Runnable {
  synced(): boolean;
  whenSynced(): Promise<void>;
  /** The settings in force and where they come from (`fallback` or `namespace/name@version`). */
  current(): { readonly config: RemediationConfig; readonly source: string };
}

/** How the watch runs. */
export interface RemediationConfigWatchOptions {
  namespace: string;
  /** The settings without a valid ConfigMap (flags, environment, file). */
  fallback: RemediationConfig;
  onChange?(config: RemediationConfig, source: string): void;
  onInvalid?(message: string): void;
}

interface CachedText {
  readonly resourceVersion: string;
  readonly text: string | undefined;
}

/** Reads a `remediation.yaml` text: the settings, or one line naming where and what. */
export function parseRemediationText(
  text: string,
  where: string,
): { config: RemediationConfig; error?: undefined } | { config?: undefined; error: string } {
  const parsed = parseConfigFile({ path: where, text });
  if ('errors' in parsed) return { error: parsed.errors[0] ?? `${where}: invalid` };
  const result = remediationConfigSchema.safeParse(parsed.value);
  if (result.success) return { config: result.data };
  const issue = result.error.issues[0];
  const path = issue?.path ?? [];
  const line = parsed.lineOf(path);
  return {
    error: `${where}${line !== undefined ? `:${line}` : ''}: ${path.map(String).join('.') || '(top)'}: ${issue?.message ?? 'invalid'}`,
  };
}

/** Builds the watch on a client of the one ConfigMap. */
export function createRemediationConfigWatch(
  deps: WatchLoopDeps,
  options: RemediationConfigWatchOptions,
): RemediationConfigWatch {
  const log: Logger = deps.log.child({ remediation: `${options.namespace}/${REMEDIATION_CONFIGMAP}` });
  const reloads = new Counter({
    name: `${metricPrefix('controller')}remediation_config_reloads_total`,
    help: 'Reloads of the remediation ConfigMap: ok (settings in force) or invalid (refused; the settings in force kept)',
    labelNames: ['result'],
    registers: [deps.registry as Registry],
  });
  for (const result of ['ok', 'invalid']) reloads.inc({ result }, 0);
  let inForce = { config: options.fallback, source: 'fallback' };
  let lastText: string | undefined;
  const where = `${options.namespace}/${REMEDIATION_CONFIGMAP}/${REMEDIATION_CONFIG_KEY}`;

  const apply = (config: RemediationConfig, source: string): void => {
    inForce = { config, source };
    reloads.inc({ result: 'ok' });
    log.info({ source, mode: config.mode, dryRun: config.dryRun }, 'remediation settings in force');
    options.onChange?.(config, source);
  };
  const seen = (data: CachedText): void => {
    if (data.text === lastText) return;
    lastText = data.text;
    if (data.text === undefined) {
      reloads.inc({ result: 'invalid' });
      const message = `${options.namespace}/${REMEDIATION_CONFIGMAP}: has no ${REMEDIATION_CONFIG_KEY} key`;
      log.warn({ reason: message }, 'remediation settings refused; keeping those in force');
      options.onInvalid?.(message);
      return;
    }
    const parsed = parseRemediationText(data.text, where);
    if (parsed.error !== undefined) {
      reloads.inc({ result: 'invalid' });
      log.warn(
        { reason: parsed.error, inForce: inForce.source },
        'remediation settings refused; keeping those in force',
      );
      options.onInvalid?.(parsed.error);
      return;
    }
    apply(parsed.config, `${options.namespace}/${REMEDIATION_CONFIGMAP}@${data.resourceVersion}`);
  };
  const loop = createWatchLoop<CachedText>(deps, {
    resource: 'remediation-configmap',
    transform: (raw: RawObject) => {
      if (raw.metadata?.name !== REMEDIATION_CONFIGMAP) return undefined;
      const data = raw.data && typeof raw.data === 'object' ? (raw.data as Record<string, unknown>) : {};
      const value = Object.hasOwn(data, REMEDIATION_CONFIG_KEY) ? data[REMEDIATION_CONFIG_KEY] : undefined;
      return {
        resourceVersion: typeof raw.metadata.resourceVersion === 'string' ? raw.metadata.resourceVersion : '',
        text: typeof value === 'string' ? value : undefined,
      };
    },
    handlers: {
      onAdd: (_key, data) => seen(data),
      onUpdate: (_key, data) => seen(data),
      onDelete: () => {
        lastText = undefined;
        if (inForce.source !== 'fallback') apply(options.fallback, 'fallback');
      },
    },
  });
  return {
    name: loop.name,
    start: (signal) => loop.start(signal),
    synced: () => loop.synced(),
    whenSynced: () => loop.whenSynced(),
    current: () => inForce,
  };
}
