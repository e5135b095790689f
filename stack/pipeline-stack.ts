/**
 * The pipeline demo's stack: a control plane (the local one `npm run cluster:up` starts, or
 * the cluster of $KUBECONFIG), the shipped RBAC rewritten into a demo namespace, two
 * controller replicas and an ingest function as processes under their ServiceAccounts'
 * tokens, and one simulated agent per kwok node under its own pod-bound token. `dispose`
 * stops every process and deletes every object it made, whatever state the run is in.
 */
import * as k8s from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONTROLLER_TOKEN_AUDIENCE } from '../contracts/index.js';
import type { SimNode } from '../core/sim/index.js';
import { FAMILIES } from '../families/index.js';
import { createAgentIdentity } from './agent-identity.js';
import { startControllerProcess, writeKubeConfig, type ControllerProcess } from './component-process.js';
import { killControlPlaneSync, startControlPlane, stopControlPlane } from '../hack/control-plane.js';
import { kubeConfigWithToken } from './kube-config.js';
import { manifestRbacObjects } from './manifest-rbac.js';

/** Marks every cluster-scoped object the demo makes, so cleanup finds them. */
export const DEMO_LABEL = 'npu-fault.io/demo';

/** A cluster to run on. */
export interface DemoCluster {
  admin: k8s.KubeConfig;
  /** Stops the control plane if the demo started it. */
  stop(): Promise<void>;
  /** The same, synchronously, from an exit handler. */
  stopSync(): void;
}

/**
 * The local control plane in a fresh state directory (stopped again at the end), or the
 * cluster of $KUBECONFIG with `existing`.
 */
export async function startDemoCluster(options: {
  existing: boolean;
  env: Readonly<Record<string, string | undefined>>;
  log: (line: string) => void;
}): Promise<DemoCluster> {
  const admin = new k8s.KubeConfig();
  if (options.existing) {
    if (!options.env.KUBECONFIG) throw new Error('--existing-cluster: KUBECONFIG is unset');
    admin.loadFromFile(options.env.KUBECONFIG);
    return { admin, stop: async () => undefined, stopSync: () => undefined };
  }
  const stateDir = mkdtempSync(join(tmpdir(), 'npu-fault-demo-plane-'));
  let building = false;
  const state = await startControlPlane({
    stateDir,
    log: (line) => {
      if (!building && line.startsWith('[build-control-plane]')) {
        building = true;
        options.log(
          'First run: building the control plane from Go modules (about twelve minutes on two cores; cached afterwards).',
        );
      }
      options.log(line);
    },
  });
  admin.loadFromFile(state.kubeconfig);
  return {
    admin,
    stop: () => stopControlPlane(stateDir),
    stopSync: () => killControlPlaneSync(stateDir),
  };
}

/** The Lease timing of the demo's replicas: a takeover within seconds of a leader kill. */
const LEASE = [
  '--lease-duration-seconds=4',
  '--lease-renew-deadline-seconds=3',
  '--lease-retry-period-seconds=0.5',
];

/**
 * Detection rules compressed for a demo that lasts a minute instead of five: a warning
 * degrades a device after 6 s (default 60) and fails it 8 s later (default 180). Everything
 * else is the shipped default.
 */
export const DEMO_RULES = 'degrade_after_s: 6\nfail_after_degraded_s: 8\n';

/** Extended resources a node advertises (what its family's device plugin would: the first of its resources). */
function capacityOf(node: SimNode): Record<string, string> {
  const resource = FAMILIES.get(node.family)?.resourceNames[0];
  return resource === undefined ? {} : { [resource]: String(node.devices.length) };
}

/** One running agent. */
export interface DemoAgent {
  node: SimNode;
  process: ControllerProcess;
  /** http://127.0.0.1:<port> of its local API (fault API, /v1/fault/stream). */
  url: string;
  /** The bearer token its fault API requires (faultHeaders). */
  faultToken: string;
}

/** Headers of a request to an agent's fault API: JSON, with its fault token. */
export function faultHeaders(agent: Pick<DemoAgent, 'faultToken'>): Record<string, string> {
  return { 'content-type': 'application/json', authorization: `Bearer ${agent.faultToken}` };
}

/** The running pipeline. */
export interface DemoStack {
  namespace: string;
  controllers: ControllerProcess[];
  function: ControllerProcess;
  agents: DemoAgent[];
  /** Stops every process, deletes every object (idempotent). */
  dispose(): Promise<void>;
  /** Kills every process at once (exit handler). */
  killSync(): void;
}

const ignoreConflict = (error: unknown): void => {
  if ((error as { code?: number }).code !== 409) throw error;
};

/** How the benchmark runs the same stack (the demo takes the defaults). */
export interface StackTuning {
  /** The rules file's text; null: the shipped defaults (default: DEMO_RULES). */
  rules?: string | null;
  /** More controller flags, per replica identity (`--record-observations=…`). */
  controllerArgs?: (identity: string) => string[];
  /** The script the controllers and the function run (a benchmark passes dist/cli/run.js). */
  entry?: string;
  /** Environment of the controllers and the function (NODE_OPTIONS as the controllers' Deployment sets it). */
  env?: Record<string, string>;
  /**
   * The function's node flags, as its Deployment's command gives them (hack/shipped-node.ts);
   * on the command line they outrank what `env`'s NODE_OPTIONS sets.
   */
  functionNodeArgs?: readonly string[];
  /** More function flags (`--forward-leader-interval-ms=10`). */
  functionArgs?: readonly string[];
  /** Stop the components with SIGTERM rather than SIGKILL (their CPU profiles are written on exit). */
  gracefulStop?: boolean;
  /** More agent flags for one node (the demo's canary on one node). */
  agentArgs?: (node: SimNode) => string[];
  /** The namespace's name prefix (default npu-fault-demo). */
  namespacePrefix?: string;
  /** The label marking the namespace and Nodes for cleanup (default DEMO_LABEL). */
  label?: string;
}

/** Deploys the pipeline for `fleet` on `admin`'s cluster. */
export async function deployPipeline(options: {
  admin: k8s.KubeConfig;
  fleet: readonly SimNode[];
  log: (line: string) => void;
  tuning?: StackTuning;
}): Promise<DemoStack> {
  const { admin, fleet, log } = options;
  const tuning = options.tuning ?? {};
  const label = tuning.label ?? DEMO_LABEL;
  const core = admin.makeApiClient(k8s.CoreV1Api);
  const objects = k8s.KubernetesObjectApi.makeApiClient(admin);
  const namespace = `${tuning.namespacePrefix ?? 'npu-fault-demo'}-${randomBytes(3).toString('hex')}`;
  const dir = mkdtempSync(join(tmpdir(), 'npu-fault-demo-'));
  const processes: ControllerProcess[] = [];
  const rbac = [
    ...manifestRbacObjects(['controller/leader-election-rbac.yaml', 'controller/rbac.yaml'], namespace),
    ...manifestRbacObjects(['functions/base/rbac.yaml'], namespace),
  ];
  const nodes: string[] = [];
  let disposed = false;
  const killSync = (): void => {
    for (const p of processes)
      if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  };
  const dispose = async (): Promise<void> => {
    if (disposed) return;
    disposed = true;
    await Promise.all(processes.map((p) => p.stop(tuning.gracefulStop ? 'SIGTERM' : 'SIGKILL')));
    for (const node of nodes) await core.deleteNode({ name: node }).catch(() => undefined);
    for (const object of rbac)
      if (object.kind?.startsWith('Cluster')) await objects.delete(object).catch(() => undefined);
    await core.deleteNamespace({ name: namespace }).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    await core.createNamespace({ body: { metadata: { name: namespace, labels: { [label]: 'true' } } } });
    for (const object of rbac) await objects.create(object);
    log(`namespace ${namespace}: the shipped RBAC of the controller and the function applied`);
    const tokenOf = async (serviceAccount: string): Promise<k8s.KubeConfig> => {
      await core
        .createNamespacedServiceAccount({ namespace, body: { metadata: { name: serviceAccount } } })
        .catch(ignoreConflict);
      const minted = await core.createNamespacedServiceAccountToken({
        name: serviceAccount,
        namespace,
        body: { spec: { audiences: [], expirationSeconds: 3600 } },
      });
      if (!minted.status?.token) throw new Error(`no token for ${serviceAccount}`);
      return kubeConfigWithToken(
        admin,
        minted.status.token,
        `system:serviceaccount:${namespace}:${serviceAccount}`,
      );
    };

    const rules = tuning.rules === undefined ? DEMO_RULES : tuning.rules;
    const rulesFile = join(dir, 'rules.yaml');
    /** A file holding a token of the function's ServiceAccount for the controllers' audience. */
    const controllerTokenFile = async (): Promise<string> => {
      const minted = await core.createNamespacedServiceAccountToken({
        name: 'npu-fault-function',
        namespace,
        body: { spec: { audiences: [CONTROLLER_TOKEN_AUDIENCE], expirationSeconds: 3600 } },
      });
      const file = join(dir, 'function-controller-token');
      writeFileSync(file, minted.status?.token ?? '', { mode: 0o600 });
      return file;
    };
    if (rules !== null) writeFileSync(rulesFile, rules);
    const replicas: string[] = [];
    for (const identity of ['replica-1', 'replica-2']) {
      const replica = startControllerProcess({
        identity,
        kubeconfig: writeKubeConfig(await tokenOf('npu-fault-controller')),
        args: [
          `--namespace=${namespace}`,
          ...LEASE,
          ...(rules === null ? [] : [`--rules=${rulesFile}`]),
          `--auth-allowed-users=system:serviceaccount:${namespace}:npu-fault-function`,
          ...(tuning.controllerArgs?.(identity) ?? []),
        ],
        ...(tuning.entry ? { entry: tuning.entry } : {}),
        ...(tuning.env ? { env: tuning.env } : {}),
      });
      processes.push(replica);
    }
    for (const replica of processes)
      replicas.push(`${replica.identity}=http://127.0.0.1:${await replica.port('observations')}`);
    log('controllers replica-1 and replica-2 listening (npu-fault-controller token)');
    const fn = startControllerProcess({
      identity: 'function',
      command: 'function',
      kubeconfig: writeKubeConfig(await tokenOf('npu-fault-function')),
      args: [
        `--namespace=${namespace}`,
        `--controllers=${replicas.join(',')}`,
        // As in a pod: a token of the controllers' own audience, for them alone.
        `--token-file=${await controllerTokenFile()}`,
        // The demo's agents are simulated; a shipped function refuses their snapshots.
        '--allow-simulated-collectors',
        ...(tuning.functionArgs ?? []),
      ],
      ...(tuning.entry ? { entry: tuning.entry } : {}),
      ...(tuning.env ? { env: tuning.env } : {}),
      ...(tuning.functionNodeArgs ? { nodeArgs: tuning.functionNodeArgs } : {}),
    });
    processes.push(fn);
    const functionUrl = `http://127.0.0.1:${await fn.port('http')}`;
    log(`ingest function listening at ${functionUrl} (npu-fault-function token)`);

    // The fault API asks for a token even on loopback: the demo drives it as one would elsewhere.
    const faultToken = randomBytes(24).toString('hex');
    const faultTokenFile = join(dir, 'fault-token');
    writeFileSync(faultTokenFile, faultToken, { mode: 0o600 });
    const starting: { node: SimNode; process: ControllerProcess }[] = [];
    for (const node of fleet) {
      const identity = await createAgentIdentity(core, namespace, node.name, `agent-${node.name}`, {
        capacity: capacityOf(node),
        kwok: true,
        labels: { [label]: namespace },
      });
      nodes.push(node.name);
      const tokenFile = join(dir, `token-${node.name}`);
      writeFileSync(tokenFile, await identity.mintToken(3600), { mode: 0o600 });
      const agent = startControllerProcess({
        identity: node.name,
        command: 'agent',
        args: [
          '--collector=sim',
          '--sim-enabled',
          `--sim-kind=${node.kind}`,
          '--sim-seed=1',
          `--node=${node.name}`,
          `--function-url=${functionUrl}`,
          `--token-file=${tokenFile}`,
          `--sim-fault-token-file=${faultTokenFile}`,
          '--probe-warmup-seconds=0',
          ...(tuning.agentArgs?.(node) ?? []),
        ],
      });
      processes.push(agent);
      starting.push({ node, process: agent });
    }
    log(
      `${fleet.length} kwok nodes with accelerator capacity, a pod and a pod-bound token each; agents starting`,
    );
    const agents: DemoAgent[] = [];
    for (const { node, process } of starting)
      agents.push({ node, process, url: `http://127.0.0.1:${await process.port('http')}`, faultToken });
    return {
      namespace,
      controllers: processes.slice(0, 2),
      function: fn,
      agents,
      dispose,
      killSync,
    };
  } catch (error) {
    await dispose();
    throw error;
  }
}
