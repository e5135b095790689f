// examples/inference-canary against the agent's config and the shipped agent manifests: the
// settings its patches give load as the agent's `canary` section, the URL names the example
// Service, and the NetworkPolicies open exactly the Service's pods and port to the agent pods.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { loadConfig } from '../../platform/index.js';
import { canaryConfigSchema } from './config.js';

type Labels = Record<string, string>;
interface Meta {
  name: string;
  namespace: string;
}
interface EnvEntry {
  name: string;
  value?: string;
  valueFrom?: { fieldRef: { fieldPath: string } };
}
interface DaemonSet {
  metadata: Meta;
  spec: {
    template: {
      metadata?: { labels: Labels };
      spec: { containers: Array<{ name: string; env: EnvEntry[] }> };
    };
  };
}
interface Service {
  metadata: Meta;
  spec: {
    type: string;
    internalTrafficPolicy: string;
    selector: Labels;
    ports: Array<{ name: string; port: number; targetPort: number; protocol: string }>;
  };
}
interface NetworkPolicy {
  metadata: Meta;
  spec: { podSelector: { matchLabels: Labels } } & Record<string, unknown>;
}

function read<T>(path: string): T[] {
  const text = readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
  return parseAllDocuments(text).map((doc) => doc.toJS() as T);
}

const agentSection = z.strictObject({ canary: canaryConfigSchema });
const shippedAgent = read<DaemonSet>('k8s/agent/daemonset.yaml')[0] as DaemonSet;
const service = read<Service>('examples/inference-canary/service.yaml')[0] as Service;
const servicePort = service.spec.ports[0] as Service['spec']['ports'][number];

/** The agent container's env of a DaemonSet patch, `$(VAR)` expanded as the kubelet does. */
function patchEnv(file: string, downward: Record<string, string>): Record<string, string> {
  const patch = read<DaemonSet>(`examples/inference-canary/${file}`)[0] as DaemonSet;
  expect(patch.metadata).toEqual({
    name: shippedAgent.metadata.name,
    namespace: shippedAgent.metadata.namespace,
  });
  const [container] = patch.spec.template.spec.containers;
  expect(container?.name).toBe(shippedAgent.spec.template.spec.containers[0]?.name);
  const env: Record<string, string> = {};
  for (const entry of container?.env ?? []) {
    const value = entry.value ?? downward[entry.valueFrom?.fieldRef.fieldPath ?? ''];
    if (value === undefined) throw new Error(`${file}: ${entry.name} has no value`);
    env[entry.name] = value.replace(/\$\(([A-Z_]{1,64})\)/g, (_, name: string) => env[name] ?? `$(${name})`);
  }
  return env;
}

describe('examples/inference-canary', () => {
  it('has a node-local Service in front of the vLLM port', () => {
    expect(service.spec).toMatchObject({ type: 'ClusterIP', internalTrafficPolicy: 'Local' });
    expect(service.spec.ports).toEqual([{ name: 'http', port: 8000, targetPort: 8000, protocol: 'TCP' }]);
  });

  it('points the agent at that Service with settings the agent loads', () => {
    const config = loadConfig(agentSection, { env: patchEnv('agent-canary.patch.yaml', {}) });
    const { name, namespace } = service.metadata;
    expect(config.canary.url).toBe(`http://${name}.${namespace}.svc:${servicePort.port}`);
    expect(config.canary).toMatchObject({ api: 'chat', check: true, expectPattern: String.raw`\b5\b` });
  });

  it('or at the node’s address from the downward API', () => {
    const env = patchEnv('agent-canary-host-ip.patch.yaml', { 'status.hostIP': '10.1.2.3' });
    expect(loadConfig(agentSection, { env }).canary).toMatchObject({
      url: 'http://10.1.2.3:8000',
      timeoutMs: 15_000,
    });
  });

  it('lets the agent pods reach exactly the Service’s pods and port, and those pods take them in', () => {
    const [egress, ingress] = read<NetworkPolicy>('examples/inference-canary/network-policies.yaml');
    const ports = [{ protocol: 'TCP', port: servicePort.targetPort }];
    const agentLabels = shippedAgent.spec.template.metadata?.labels ?? {};
    const agentSelector = egress?.spec.podSelector.matchLabels ?? {};
    // The agent pods carry every label the policy selects them by.
    expect(Object.keys(agentSelector).length).toBeGreaterThan(0);
    for (const [key, value] of Object.entries(agentSelector))
      expect([key, agentLabels[key]]).toEqual([key, value]);
    expect(egress?.metadata.namespace).toBe(shippedAgent.metadata.namespace);
    expect(egress?.spec).toEqual({
      podSelector: { matchLabels: agentSelector },
      policyTypes: ['Egress'],
      egress: [
        {
          to: [
            {
              namespaceSelector: {
                matchLabels: { 'kubernetes.io/metadata.name': service.metadata.namespace },
              },
              podSelector: { matchLabels: service.spec.selector },
            },
          ],
          ports,
        },
      ],
    });
    expect(ingress?.metadata.namespace).toBe(service.metadata.namespace);
    expect(ingress?.spec).toEqual({
      podSelector: { matchLabels: service.spec.selector },
      policyTypes: ['Ingress'],
      ingress: [
        {
          from: [
            {
              namespaceSelector: {
                matchLabels: { 'kubernetes.io/metadata.name': shippedAgent.metadata.namespace },
              },
              podSelector: { matchLabels: agentSelector },
            },
          ],
          ports,
        },
      ],
    });
  });
});
