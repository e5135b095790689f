/**
 * How a shipped workload runs Node: the container's NODE_OPTIONS and the flags its `command`
 * gives node before the script. Benchmarks and the demo run a component as its manifest does
 * (some V8 flags, such as --min-semi-space-size, NODE_OPTIONS refuses: those are on the
 * command line).
 */
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';

/** Node's settings of a manifest's first container. */
export interface ShippedNode {
  /** NODE_OPTIONS ('' when unset). */
  nodeOptions: string;
  /** Flags between the node binary and the script in `command` ([] when there is no command). */
  nodeArgs: string[];
  /** glibc malloc's tuning (`MALLOC_*` variables) the container sets, {} when none. */
  mallocEnv: Record<string, string>;
}

interface Container {
  command?: string[];
  env?: { name: string; value?: string }[];
}

/** Reads `file` (a Deployment, DaemonSet or Knative Service) and returns its first container's Node settings. */
export function shippedNode(file: string): ShippedNode {
  for (const document of parseAllDocuments(readFileSync(file, 'utf8'))) {
    const object = document.toJS() as { spec?: { template?: { spec?: { containers?: Container[] } } } };
    const container = object?.spec?.template?.spec?.containers?.[0];
    if (!container) continue;
    const command = container.command ?? [];
    const script = command.findIndex((part, i) => i > 0 && !part.startsWith('-'));
    const malloc = (container.env ?? []).filter((e) => e.name.startsWith('MALLOC_') && e.value !== undefined);
    return {
      nodeOptions: container.env?.find((e) => e.name === 'NODE_OPTIONS')?.value ?? '',
      nodeArgs: command.slice(1, script === -1 ? command.length : script),
      mallocEnv: Object.fromEntries(malloc.map((e) => [e.name, e.value as string])),
    };
  }
  throw new Error(`${file}: no workload with a container`);
}
