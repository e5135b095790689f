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
import {
  controllerAccess,
  functionAccess,
  functionCallerToken,
  type ControllerAccess,
} from './setup/controller-rbac.js';
import { startTestReplica, type ControllerProcess, startTestFunction } from './setup/controller-process.js';
import { createAgentIdentity } from './setup/agent-identity.js';
import { renderManifests, serverDryRun } from './setup/manifests.js';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';

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

describe('the function-to-controller hop over TLS (threat: sniffing or impersonating a controller)', () => {
  // A CA and a certificate for 127.0.0.1/localhost made for tests only (functions/forwarder/testdata).
  const testdata = (file: string): string => join(repoRoot, 'functions/forwarder/testdata', file);
  let ns: TestNamespace;
  let access: ControllerAccess;
  let fnAccess: ControllerAccess;
  const processes: ControllerProcess[] = [];
  let controllerPort: number;
  let functionUrl: string;
  let agentToken: string;
  let node: string;
  const dir = mkdtempSync(join(tmpdir(), 'npu-fault-security-'));

  beforeAll(async () => {
    ns = await createTestNamespace('security-tls');
    access = await controllerAccess(ns);
    fnAccess = await functionAccess(ns);
    node = `${ns.name}-n1`;
    agentToken = await (
      await createAgentIdentity(ns.admin.makeApiClient(k8s.CoreV1Api), ns.name, node)
    ).mintToken();
    const replica = await startTestReplica({
      identity: 'replica-1',
      namespace: ns.name,
      access,
      args: [`--tls-cert-file=${testdata('replica.pem')}`, `--tls-key-file=${testdata('replica-key.pem')}`],
    });
    processes.push(replica);
    controllerPort = await replica.port('observations');
    const fn = await startTestFunction({
      ns,
      access: fnAccess,
      dir,
      controllers: `replica-1=https://127.0.0.1:${controllerPort}`,
      // The CA the function trusts, as a pod gets it mounted (k8s/controller/tls).
      env: { NODE_EXTRA_CA_CERTS: testdata('ca.pem') },
    });
    processes.push(fn);
    functionUrl = `http://127.0.0.1:${await fn.port('http')}`;
    await replica.waitForLog((l) => l.msg === 'started leading', 60_000, 'leading');
  }, 120_000);

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    await ns?.dispose().catch(() => undefined);
    await ns?.admin
      .makeApiClient(k8s.CoreV1Api)
      .deleteNode({ name: node })
      .catch(() => undefined);
    await fnAccess?.dispose();
    await access?.dispose();
    await ns?.dispose();
  });

  it('is one component away in the manifests: https on the Service port, the Secret mounted where the flags say', async () => {
    const objects = await renderManifests<Workload & k8s.V1Service>(['k8s'], ['k8s/controller/tls']);
    const service = objects.find((o) => o.kind === 'Service' && o.metadata?.name === 'npu-fault-controller');
    // What the function's EndpointSlice source reads to dial https (functions/forwarder).
    expect(service?.spec?.ports?.find((p) => p.name === 'http')?.appProtocol).toBe('https');
    const podOf = (name: string): k8s.V1PodSpec =>
      objects.find((o) => o.kind === 'Deployment' && o.metadata?.name === name)!.spec.template.spec;
    const mountedFile = (pod: k8s.V1PodSpec, file: string | undefined): k8s.V1Volume | undefined => {
      const mount = pod.containers[0]?.volumeMounts?.find((m) => file?.startsWith(`${m.mountPath}/`));
      return pod.volumes?.find((v) => v.name === mount?.name);
    };
    const controller = podOf('npu-fault-controller');
    const flag = (name: string): string | undefined =>
      controller.containers[0]?.args?.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
    for (const name of ['tls-cert-file', 'tls-key-file'])
      expect(mountedFile(controller, flag(name))?.secret?.secretName).toBe('npu-fault-controller-tls');
    // The key is readable by the controller's user: by group (fsGroup) at mode 0440, or by all.
    const keyVolume = mountedFile(controller, flag('tls-key-file'))?.secret;
    const mode = keyVolume?.defaultMode ?? 0o644;
    const user = controller.securityContext?.runAsUser;
    expect(
      (mode & 0o004) !== 0 || ((mode & 0o040) !== 0 && controller.securityContext?.fsGroup === user),
    ).toBe(true);
    const fn = podOf('npu-fault-function');
    const ca = fn.containers[0]?.env?.find((e) => e.name === 'NODE_EXTRA_CA_CERTS')?.value;
    expect(mountedFile(fn, ca)?.secret?.secretName).toBe('npu-fault-controller-tls');
    // The certificate names what the function checks: <service>.<namespace>.svc.
    const certificate = parseAllDocuments(
      readFileSync(join(repoRoot, 'k8s/controller/tls/certificate.yaml'), 'utf8'),
    )[0]?.toJS() as { spec: { dnsNames: string[]; secretName: string } };
    expect(certificate.spec.secretName).toBe('npu-fault-controller-tls');
    expect(certificate.spec.dnsNames).toContain(`npu-fault-controller.${service?.metadata?.namespace}.svc`);
    // And the patched objects are valid to the apiserver.
    const patched = [service!, ...objects.filter((o) => o.kind === 'Deployment')];
    const lines = await serverDryRun(patched, ns.name);
    expect(lines).toHaveLength(patched.length);
    for (const line of lines) expect(line).toContain('(server dry run)');
  });

  it('carries observations over HTTPS to a controller serving its certificate; plain HTTP gets nothing', async () => {
    const post = (): Promise<Response> =>
      fetch(`${functionUrl}/v1/snapshots`, {
        method: 'POST',
        headers: { authorization: `Bearer ${agentToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(gpuSnapshot({ node, xids: [79], collectedAt: new Date().toISOString() })),
        signal: AbortSignal.timeout(10_000),
      });
    let response = await post();
    for (let i = 0; response.status === 503 && i < 50; i++) {
      await new Promise((resolve) => setTimeout(resolve, 200)); // the agent's retry, as told
      response = await post();
    }
    expect(response.status).toBe(200);
    await expect(
      fetch(`http://127.0.0.1:${controllerPort}/v1/observations`, { method: 'POST' }),
    ).rejects.toThrow();
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
