/**
 * The shipped NetworkPolicies (k8s/network-policies, issue 27). The test plane has no CNI to
 * enforce them, so: the apiserver validates them (server-side dry run), and a small
 * evaluator of the NetworkPolicy rules (podSelector, namespaceSelector, ipBlock-free peers,
 * port numbers and named ports resolved on the destination pod's containers, the "selected
 * by no policy of that direction: allowed" default) runs over the rendered pod templates'
 * own labels, ports and namespaces. Every path npu-fault uses must be open, the paths it must
 * not open must be closed, every policy and peer must select something, and a relabelled pod
 * template must change the answer: a relabel cannot silently open or close a path.
 */
import { beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { binDir, createTestNamespace } from './setup/cluster.js';
import { serverDryRun } from './setup/manifests.js';

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('..', import.meta.url));

type Workload = k8s.KubernetesObject & { spec: { template: k8s.V1PodTemplateSpec } };
/** A rule as the YAML has it (client-node's class renames `from` to `_from`). */
interface PolicyRule {
  from?: k8s.V1NetworkPolicyPeer[];
  to?: k8s.V1NetworkPolicyPeer[];
  ports?: k8s.V1NetworkPolicyPort[];
}
/** A NetworkPolicy as rendered. */
interface NetworkPolicy {
  metadata?: k8s.V1ObjectMeta;
  spec?: {
    podSelector?: k8s.V1LabelSelector;
    policyTypes?: string[];
    ingress?: PolicyRule[];
    egress?: PolicyRule[];
  };
}

/** A pod as NetworkPolicy sees it: its namespace (with its labels), its labels, its ports. */
interface Endpoint {
  readonly name: string;
  readonly namespace: string;
  readonly namespaceLabels: Record<string, string>;
  readonly labels: Record<string, string>;
  readonly ports: readonly k8s.V1ContainerPort[];
}
/** An address that is no pod (the apiserver, the internet): only ipBlock or an empty `to` matches it. */
interface External {
  readonly name: string;
  readonly external: true;
}
type Peer = Endpoint | External;
interface Connection {
  readonly port: number;
  readonly protocol: 'TCP' | 'UDP';
}

const isExternal = (peer: Peer): peer is External => 'external' in peer;

/** matchLabels and matchExpressions, as the apiserver evaluates a LabelSelector. */
function selects(selector: k8s.V1LabelSelector | undefined, labels: Record<string, string>): boolean {
  if (!selector) return false;
  for (const [key, value] of Object.entries(selector.matchLabels ?? {}))
    if (labels[key] !== value) return false;
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, key);
    const value = labels[key];
    const ok =
      operator === 'In'
        ? has && values.includes(value ?? '')
        : operator === 'NotIn'
          ? !has || !values.includes(value ?? '')
          : operator === 'Exists'
            ? has
            : operator === 'DoesNotExist'
              ? !has
              : false;
    if (!ok) return false;
  }
  return true;
}

/** The port (number or container-port name, resolved on `target`) a rule's port entry opens. */
function portMatches(entry: k8s.V1NetworkPolicyPort, target: Peer, connection: Connection): boolean {
  if ((entry.protocol ?? 'TCP') !== connection.protocol) return false;
  if (entry.port === undefined) return true;
  if (typeof entry.port === 'number') return entry.port === connection.port;
  if (/^\d+$/.test(entry.port)) return Number(entry.port) === connection.port;
  // A named port exists only on a pod: the destination's container port of that name.
  if (isExternal(target)) return false;
  return target.ports.some(
    (p) =>
      p.name === entry.port &&
      p.containerPort === connection.port &&
      (p.protocol ?? 'TCP') === connection.protocol,
  );
}

/** Whether `peer` (the other end) is one of a rule's `from`/`to` entries, seen from `policyNamespace`. */
function peerMatches(
  peers: k8s.V1NetworkPolicyPeer[] | undefined,
  peer: Peer,
  policyNamespace: string,
): boolean {
  if (peers === undefined || peers.length === 0) return true;
  return peers.some((p) => {
    if (p.ipBlock) throw new Error('the evaluator does not model ipBlock; extend it before shipping one');
    if (isExternal(peer)) return false;
    const inNamespace = p.namespaceSelector
      ? selects(p.namespaceSelector, peer.namespaceLabels)
      : peer.namespace === policyNamespace;
    return inNamespace && (p.podSelector ? selects(p.podSelector, peer.labels) : true);
  });
}

class Policies {
  constructor(readonly policies: readonly NetworkPolicy[]) {}

  /** The policies of `pod`'s namespace whose podSelector selects it, for `direction`. */
  governing(pod: Endpoint, direction: 'Ingress' | 'Egress'): NetworkPolicy[] {
    return this.policies.filter(
      (p) =>
        p.metadata?.namespace === pod.namespace &&
        selects(p.spec?.podSelector, pod.labels) &&
        (p.spec?.policyTypes ?? ['Ingress']).includes(direction),
    );
  }

  /** Whether a connection from `source` to `target` on `connection` gets through both ends' policies. */
  allows(source: Peer, target: Peer, connection: Connection): boolean {
    return this.#egress(source, target, connection) && this.#ingress(source, target, connection);
  }

  #egress(source: Peer, target: Peer, connection: Connection): boolean {
    if (isExternal(source)) return true;
    const governing = this.governing(source, 'Egress');
    if (governing.length === 0) return true;
    return governing.some((p) =>
      (p.spec?.egress ?? []).some(
        (rule) =>
          peerMatches(rule.to, target, source.namespace) &&
          (rule.ports === undefined ||
            rule.ports.length === 0 ||
            rule.ports.some((e) => portMatches(e, target, connection))),
      ),
    );
  }

  #ingress(source: Peer, target: Peer, connection: Connection): boolean {
    if (isExternal(target)) return true;
    const governing = this.governing(target, 'Ingress');
    if (governing.length === 0) return true;
    return governing.some((p) =>
      (p.spec?.ingress ?? []).some(
        (rule) =>
          peerMatches(rule.from, source, target.namespace) &&
          (rule.ports === undefined ||
            rule.ports.length === 0 ||
            rule.ports.some((e) => portMatches(e, target, connection))),
      ),
    );
  }
}

const TCP = (port: number): Connection => ({ port, protocol: 'TCP' });
const UDP = (port: number): Connection => ({ port, protocol: 'UDP' });

/** Namespace labels as the apiserver sets them: kubernetes.io/metadata.name is always the name. */
const namespaceLabels = (name: string, labels: Record<string, string> = {}): Record<string, string> => ({
  ...labels,
  'kubernetes.io/metadata.name': name,
});

/** Pods outside npu-fault that the policies name or must keep out. */
const OUTSIDERS = {
  prometheus: {
    name: 'prometheus',
    namespace: 'monitoring',
    namespaceLabels: namespaceLabels('monitoring'),
    labels: { 'app.kubernetes.io/name': 'prometheus' },
    ports: [],
  },
  kubeDns: {
    name: 'coredns',
    namespace: 'kube-system',
    namespaceLabels: namespaceLabels('kube-system'),
    labels: { 'k8s-app': 'kube-dns' },
    ports: [
      { name: 'dns', containerPort: 53, protocol: 'UDP' },
      { name: 'dns-tcp', containerPort: 53, protocol: 'TCP' },
    ],
  },
  tenant: {
    name: 'tenant',
    namespace: 'team-a',
    namespaceLabels: namespaceLabels('team-a', { 'npu-fault.io/status-mirror': 'true' }),
    labels: { app: 'vllm' },
    ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }],
  },
} satisfies Record<string, Endpoint>;
const APISERVER: External = { name: 'apiserver', external: true };
const INTERNET: External = { name: 'internet', external: true };

async function render(): Promise<k8s.KubernetesObject[]> {
  const { stdout } = await run(join(binDir(), 'kubectl'), ['kustomize', join(repoRoot, 'k8s')], {
    maxBuffer: 16 * 1024 * 1024,
  });
  return parseAllDocuments(stdout).map((d) => d.toJS() as k8s.KubernetesObject);
}

/** Each workload's pod as NetworkPolicy sees it, from its rendered pod template. */
function endpointsOf(objects: k8s.KubernetesObject[]): Record<string, Endpoint> {
  const namespaces = new Map(
    objects
      .filter((o) => o.kind === 'Namespace')
      .map((o) => [o.metadata?.name ?? '', o.metadata?.labels ?? {}]),
  );
  const workloads = objects.filter((o) => o.kind === 'Deployment' || o.kind === 'DaemonSet') as Workload[];
  return Object.fromEntries(
    workloads.map((w) => {
      const namespace = w.metadata?.namespace ?? '';
      const labels = namespaces.get(namespace);
      if (!labels) throw new Error(`${w.metadata?.name} runs in ${namespace}, which k8s/ does not create`);
      const endpoint: Endpoint = {
        name: w.metadata?.name ?? '',
        namespace,
        namespaceLabels: namespaceLabels(namespace, labels),
        labels: w.spec.template.metadata?.labels ?? {},
        ports: (w.spec.template.spec?.containers ?? []).flatMap((c) => c.ports ?? []),
      };
      return [endpoint.name, endpoint];
    }),
  );
}

/** The container port named `name` of `pod` (the number a rule must open). */
function portNamed(pod: Endpoint, name: string): Connection {
  const port = pod.ports.find((p) => p.name === name);
  if (!port) throw new Error(`${pod.name} has no port named ${name}`);
  return { port: port.containerPort, protocol: (port.protocol ?? 'TCP') as Connection['protocol'] };
}

describe('k8s/network-policies', () => {
  let objects: k8s.KubernetesObject[];
  let policies: Policies;
  let pods: Record<string, Endpoint>;
  let agent: Endpoint;
  let fn: Endpoint;
  let controller: Endpoint;

  beforeAll(async () => {
    objects = await render();
    policies = new Policies(objects.filter((o) => o.kind === 'NetworkPolicy') as NetworkPolicy[]);
    pods = endpointsOf(objects);
    const pod = (name: string): Endpoint => {
      const found = pods[name];
      if (!found) throw new Error(`k8s/ renders no workload ${name}`);
      return found;
    };
    agent = pod('npu-fault-agent');
    fn = pod('npu-fault-function');
    controller = pod('npu-fault-controller');
  });

  it('deny all traffic by default in both namespaces, in and out', () => {
    for (const namespace of [agent.namespace, controller.namespace]) {
      const denyAll = policies.policies.filter(
        (p) =>
          p.metadata?.namespace === namespace &&
          Object.keys(p.spec?.podSelector ?? {}).length === 0 &&
          (p.spec?.ingress ?? []).length === 0 &&
          (p.spec?.egress ?? []).length === 0,
      );
      expect({ namespace, types: denyAll.flatMap((p) => p.spec?.policyTypes ?? []).sort() }).toEqual({
        namespace,
        types: ['Egress', 'Ingress'],
      });
    }
    // Every shipped pod is governed both ways, so nothing it does is allowed by omission.
    for (const pod of Object.values(pods))
      for (const direction of ['Ingress', 'Egress'] as const)
        expect({ pod: pod.name, direction, governed: policies.governing(pod, direction).length > 0 }).toEqual(
          {
            pod: pod.name,
            direction,
            governed: true,
          },
        );
  });

  it('open every path npu-fault uses, on the ports the containers name', () => {
    const open: [string, Peer, Peer, Connection][] = [
      ['agents post snapshots to the function', agent, fn, portNamed(fn, 'http')],
      ['the function forwards to the controllers', fn, controller, portNamed(controller, 'http')],
      ['the controller calls the apiserver (Service port)', controller, APISERVER, TCP(443)],
      ['the controller calls the apiserver (its own port)', controller, APISERVER, TCP(6443)],
      ['the function calls the apiserver (Service port)', fn, APISERVER, TCP(443)],
      ['the function calls the apiserver (its own port)', fn, APISERVER, TCP(6443)],
      [
        'Prometheus scrapes the controller',
        OUTSIDERS.prometheus,
        controller,
        portNamed(controller, 'metrics'),
      ],
      ['Prometheus scrapes the function', OUTSIDERS.prometheus, fn, portNamed(fn, 'http')],
      ['Prometheus scrapes the agent', OUTSIDERS.prometheus, agent, portNamed(agent, 'http')],
      ['a pod on the node reads its agent', OUTSIDERS.tenant, agent, portNamed(agent, 'http')],
      ...[agent, fn, controller].flatMap((pod): [string, Peer, Peer, Connection][] => [
        [`${pod.name} resolves names (UDP)`, pod, OUTSIDERS.kubeDns, UDP(53)],
        [`${pod.name} resolves names (TCP)`, pod, OUTSIDERS.kubeDns, TCP(53)],
      ]),
    ];
    for (const [path, source, target, connection] of open)
      expect({ path, allowed: policies.allows(source, target, connection) }).toEqual({ path, allowed: true });
  });

  it('keep closed what npu-fault does not use', () => {
    const closed: [string, Peer, Peer, Connection][] = [
      ['a tenant posts snapshots', OUTSIDERS.tenant, fn, portNamed(fn, 'http')],
      ['a tenant posts observations', OUTSIDERS.tenant, controller, portNamed(controller, 'http')],
      [
        'a tenant reads the controller’s metrics',
        OUTSIDERS.tenant,
        controller,
        portNamed(controller, 'metrics'),
      ],
      ['an agent skips the function', agent, controller, portNamed(controller, 'http')],
      ['an agent calls the apiserver (it has no credential)', agent, APISERVER, TCP(443)],
      ['an agent calls the apiserver on its own port', agent, APISERVER, TCP(6443)],
      ['an agent calls out of the cluster', agent, INTERNET, TCP(80)],
      ['the controller calls the function', controller, fn, portNamed(fn, 'http')],
      ['the controller calls an agent', controller, agent, portNamed(agent, 'http')],
      ['the function calls an agent', fn, agent, portNamed(agent, 'http')],
      ['the function calls out of the cluster (plain HTTP)', fn, INTERNET, TCP(80)],
      ['Prometheus posts observations', OUTSIDERS.prometheus, controller, portNamed(controller, 'http')],
      ['an address outside the cluster reaches an agent', INTERNET, agent, portNamed(agent, 'http')],
      ['an agent reaches the function on another port', agent, fn, TCP(9090)],
    ];
    for (const [path, source, target, connection] of closed)
      expect({ path, allowed: policies.allows(source, target, connection) }).toEqual({
        path,
        allowed: false,
      });
  });

  it('select a shipped pod with every policy and something real with every peer and named port', () => {
    const everyone: Endpoint[] = [...Object.values(pods), ...Object.values(OUTSIDERS)];
    for (const policy of policies.policies) {
      const name = `${policy.metadata?.namespace}/${policy.metadata?.name}`;
      const selected = Object.values(pods).filter(
        (p) => p.namespace === policy.metadata?.namespace && selects(policy.spec?.podSelector, p.labels),
      );
      expect({ name, selects: selected.map((p) => p.name) }).not.toEqual({ name, selects: [] });
      const rules = [
        ...(policy.spec?.ingress ?? []).map((r) => ({ peers: r.from, ports: r.ports, targets: selected })),
        ...(policy.spec?.egress ?? []).map((r) => ({ peers: r.to, ports: r.ports, targets: undefined })),
      ];
      for (const rule of rules) {
        const peers = everyone.filter((p) => peerMatches(rule.peers, p, policy.metadata?.namespace ?? ''));
        expect({ name, peers: peers.length > 0 }).toEqual({ name, peers: true });
        // A named port must name a container port where the connection ends.
        const targets = rule.targets ?? peers;
        for (const entry of rule.ports ?? [])
          if (typeof entry.port === 'string')
            expect({
              name,
              port: entry.port,
              resolves: targets.some((t) => t.ports.some((p) => p.name === entry.port)),
            }).toEqual({
              name,
              port: entry.port,
              resolves: true,
            });
      }
    }
  });

  it('notice a relabelled pod template or a renamed port (the evaluator has teeth)', () => {
    const relabelled: Endpoint = { ...fn, labels: { ...fn.labels, 'app.kubernetes.io/name': 'ingest' } };
    expect(policies.allows(agent, relabelled, portNamed(fn, 'http'))).toBe(false);
    expect(policies.allows(relabelled, controller, portNamed(controller, 'http'))).toBe(false);
    const renamedPort: Endpoint = {
      ...controller,
      ports: controller.ports.map((p) => (p.name === 'metrics' ? { ...p, name: 'prom' } : p)),
    };
    expect(policies.allows(OUTSIDERS.prometheus, renamedPort, TCP(9090))).toBe(false);
    const movedAgent: Endpoint = {
      ...agent,
      namespace: 'elsewhere',
      namespaceLabels: namespaceLabels('elsewhere'),
    };
    expect(policies.allows(movedAgent, fn, portNamed(fn, 'http'))).toBe(false);
  });

  it('pass a server-side dry run', async () => {
    // Into test namespaces standing for the two shipped ones.
    const standIns = await Promise.all(
      ['np-control', 'np-agent'].map((prefix) => createTestNamespace(prefix)),
    );
    try {
      const rename = new Map([
        [controller.namespace, standIns[0]?.name ?? ''],
        [agent.namespace, standIns[1]?.name ?? ''],
      ]);
      const stdout = (await serverDryRun(policies.policies, rename)).join('\n');
      expect(stdout.trim().split('\n')).toHaveLength(policies.policies.length);
      expect(stdout).toMatch(
        /networkpolicy.networking.k8s.io\/npu-fault-default-deny serverside-applied \(server dry run\)/,
      );
    } finally {
      for (const ns of standIns) await ns.dispose();
    }
  });
});
