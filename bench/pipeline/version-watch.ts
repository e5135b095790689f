/**
 * A watcher of the status ConfigMap that only notes which version arrived when: it finds the
 * object's resourceVersion in each raw watch line by a byte search instead of parsing the
 * event. The benchmark's 99 plain watchers stand for consumers on other machines; parsing
 * every version of a document of up to 900 KiB a hundred times over cost the load generator
 * more CPU than the controller it measures, and the machine is shared. What the apiserver
 * sends them is unchanged. The primary watcher still parses every version.
 */
import * as k8s from '@kubernetes/client-node';
import { fetch } from 'undici';
import { STATUS_CONFIGMAP_NAME } from '../../contracts/index.js';

const NEWLINE = 0x0a;
const VERSION_KEY = Buffer.from('"resourceVersion":"');
const ERROR_PREFIX = Buffer.from('{"type":"ERROR"');
const CHANGE_PREFIXES = [Buffer.from('{"type":"ADDED"'), Buffer.from('{"type":"MODIFIED"')];

/**
 * What one watch event line says, without parsing it: the object's resourceVersion (its
 * metadata comes before its data, as the apiserver writes it) of an ADDED or MODIFIED event;
 * `error` for an ERROR event (start over without resuming); undefined for anything else.
 */
export function versionOfLine(line: Buffer): string | 'error' | undefined {
  if (line.subarray(0, ERROR_PREFIX.length).equals(ERROR_PREFIX)) return 'error';
  if (!CHANGE_PREFIXES.some((prefix) => line.subarray(0, prefix.length).equals(prefix))) return undefined;
  const at = line.indexOf(VERSION_KEY);
  if (at < 0) return undefined;
  const start = at + VERSION_KEY.length;
  const end = line.indexOf(0x22, start); // the closing quote
  return end < 0 ? undefined : line.toString('latin1', start, end);
}

/** Watches the status ConfigMap of `namespace`, calling `onVersion` per version, until `stop`. */
export function watchStatusVersions(
  kc: k8s.KubeConfig,
  namespace: string,
  onVersion: (resourceVersion: string, at: number) => void,
): { stop(): void } {
  const abort = new AbortController();
  let resume: string | undefined;
  const once = async (): Promise<void> => {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('no current cluster');
    const url = new URL(`${cluster.server}/api/v1/namespaces/${namespace}/configmaps`);
    url.searchParams.set('watch', 'true');
    url.searchParams.set('fieldSelector', `metadata.name=${STATUS_CONFIGMAP_NAME}`);
    if (resume) url.searchParams.set('resourceVersion', resume);
    const context = new k8s.RequestContext(url.toString(), k8s.HttpMethod.GET);
    await kc.applySecurityAuthentication(context);
    const response = await fetch(url, {
      headers: context.getHeaders(),
      dispatcher: context.getDispatcher() as never,
      signal: abort.signal,
    });
    if (response.status !== 200 || !response.body) throw new Error(`watch answered ${response.status}`);
    let pending = Buffer.alloc(0);
    for await (const chunk of response.body) {
      const at = Date.now();
      pending = pending.length === 0 ? Buffer.from(chunk) : Buffer.concat([pending, chunk]);
      let newline = pending.indexOf(NEWLINE);
      while (newline >= 0) {
        const version = versionOfLine(pending.subarray(0, newline));
        if (version === 'error') resume = undefined;
        else if (version !== undefined) {
          resume = version;
          onVersion(version, at);
        }
        pending = pending.subarray(newline + 1);
        newline = pending.indexOf(NEWLINE);
      }
    }
  };
  const loop = async (): Promise<void> => {
    while (!abort.signal.aborted) {
      await once().catch(() => undefined);
      if (!abort.signal.aborted) await new Promise((resolve) => setTimeout(resolve, 200).unref());
    }
  };
  void loop();
  return { stop: () => abort.abort() };
}
