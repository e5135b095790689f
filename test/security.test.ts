/**
 * The controls of docs/security.md that stand or fall on the real control plane and the
 * shipped manifests (issue 27). Each test names the threat it answers.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { CONTROLLER_TOKEN_AUDIENCE } from '../contracts/index.js';
import { gpuSnapshot } from '../contracts/testing.js';
import { binDir, createTestNamespace, type TestNamespace } from './setup/cluster.js';
import { controllerAccess, functionCallerToken, type ControllerAccess } from './setup/controller-rbac.js';
import { startTestReplica, type ControllerProcess } from './setup/controller-process.js';

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('..', import.meta.url));

type Workload = k8s.KubernetesObject & { spec: { template: { spec: k8s.V1PodSpec } } };

async function rendered(): Promise<Workload[]> {
  const { stdout } = await run(join(binDir(), 'kubectl'), ['kustomize', join(repoRoot, 'k8s')], {
    maxBuffer: 16 * 1024 * 1024,
  });
  return parseAllDocuments(stdout)
    .map((d) => d.toJS() as Workload)
    .filter((o) => o.kind === 'Deployment' || o.kind === 'DaemonSet');
}

const named = (objects: Workload[], name: string): Workload => {
  const found = objects.find((o) => o.metadata?.name === name);
  if (!found) throw new Error(`no workload ${name} in k8s/`);
  return found;
};

describe('a stolen ingest-function token (threat: a token for the apiserver used against the controllers)', () => {
  let ns: TestNamespace;
  let access: ControllerAccess;
  let replica: ControllerProcess;
  let url: string;

  beforeAll(async () => {
    ns = await createTestNamespace('security');
    access = await controllerAccess(ns);
    // The controller as shipped: no --auth-audiences, so its default (npu-fault-controller).
    replica = await startTestReplica({ identity: 'replica-1', namespace: ns.name, access });
    url = `http://127.0.0.1:${await replica.port('observations')}`;
    await replica.waitForLog((l) => l.msg === 'seeded', 60_000, 'seeded');
  });

  afterAll(async () => {
    await replica?.stop('SIGKILL');
    await access?.dispose();
    await ns?.dispose();
  });

  const post = async (token: string): Promise<number> =>
    (
      await fetch(`${url}/v1/observations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          observations: [{ snapshot: gpuSnapshot({ node: `${ns.name}-n`, xids: [79] }) }],
        }),
      })
    ).status;

  it("is refused: the function's own apiserver token, or one made with `kubectl create token`, is not the controllers' audience", async () => {
    // What a thief has: the automounted token (audience: the apiserver) of the function's ServiceAccount.
    const stolen = await ns.serviceAccountKubeConfig('npu-fault-function');
    const token = stolen.getCurrentUser()?.token ?? '';
    expect(token).not.toBe('');
    expect(await post(token)).toBe(401);
    // The projected token the function really sends is taken.
    expect(await post(await functionCallerToken(ns))).toBe(200);
  });
});

describe('the shipped manifests (threat: a compromised accelerator node)', () => {
  let workloads: Workload[];
  beforeAll(async () => {
    workloads = await rendered();
  });

  it("give the function a short-lived projected token of the controllers' audience, and read it from there", () => {
    const pod = named(workloads, 'npu-fault-function').spec.template.spec;
    const volume = pod.volumes?.find((v) => v.projected?.sources?.some((s) => s.serviceAccountToken));
    const projection = volume?.projected?.sources?.find((s) => s.serviceAccountToken)?.serviceAccountToken;
    expect(projection).toMatchObject({ audience: CONTROLLER_TOKEN_AUDIENCE });
    expect(projection?.expirationSeconds).toBeLessThanOrEqual(600);
    const container = pod.containers[0];
    const mount = container?.volumeMounts?.find((m) => m.name === volume?.name);
    const tokenFile = container?.env?.find((e) => e.name === 'NPU_FAULT_TOKEN_FILE')?.value;
    expect(tokenFile).toBe(`${mount?.mountPath}/${projection?.path}`);
  });

  it('keep the controller and the function off every node the agent runs on', () => {
    const agentTerms =
      named(workloads, 'npu-fault-agent').spec.template.spec.affinity?.nodeAffinity
        ?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
    const agentLabels = agentTerms.flatMap((t) => t.matchExpressions ?? []);
    expect(agentLabels.length).toBeGreaterThanOrEqual(3);
    for (const name of ['npu-fault-controller', 'npu-fault-function']) {
      const terms =
        named(workloads, name).spec.template.spec.affinity?.nodeAffinity
          ?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
      // One term (its expressions ANDed) that excludes each label the agent selects by.
      expect({ name, terms: terms.length }).toEqual({ name, terms: 1 });
      const excluded = terms[0]?.matchExpressions ?? [];
      for (const label of agentLabels)
        expect({ name, label: label.key, excluded: excluded.find((e) => e.key === label.key) }).toEqual({
          name,
          label: label.key,
          excluded: { key: label.key, operator: 'NotIn', values: label.values },
        });
    }
  });
});
