/**
 * The ingest function's manifests (k8s/functions/) against the real apiserver: the plain
 * Deployment hosting and the Knative overlay both render with `kubectl kustomize` and pass a
 * server-side dry run. For the overlay, the real Knative Serving CRDs (from the Go module
 * knative.dev/serving, hack/knative-crds.sh) are installed first, so the Knative Service is
 * checked against Knative's own schema, strictly (an unknown field fails). Knative's webhook
 * is not there: the rules it would add (reserved env names, probe ports, default feature
 * flags) are asserted here, and so is the overlay keeping in step with the Deployment.
 *
 * The RBAC is least privilege, structurally (the exact rules, no wildcards, resourceNames on
 * the Lease) and for real: applied into a test namespace, the apiserver's authorizer answers
 * SubjectAccessReviews for the function's ServiceAccount with exactly what it needs.
 *
 * The Knative CRDs are cluster-scoped and stay installed (every test run starts a new
 * control plane; on an existing cluster an installed copy is left as it is).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseAllDocuments, stringify } from 'yaml';
import { findKnativeCrds, readKnativeCrds } from '../hack/knative.js';
import { binDir, createTestNamespace, watchUntil, type TestNamespace } from './setup/cluster.js';

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const BASE = join(repoRoot, 'k8s/functions');
const KNATIVE = join(repoRoot, 'k8s/functions/knative');
const NAME = 'npu-fault-function';
const SHIPPED_NAMESPACE = 'ai-infra';
/** A cold fetch takes about a second (2.4 MB through the Go module proxy); allow a slow proxy. */
const KNATIVE_FETCH_TIMEOUT_MS = 5 * 60_000;
/** Env names Knative sets itself and refuses in a user container (its k8s_validation.go). */
const KNATIVE_RESERVED_ENV = ['PORT', 'K_SERVICE', 'K_CONFIGURATION', 'K_REVISION'];

type KubeObject = k8s.KubernetesObject & Record<string, unknown>;
interface Rule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs: string[];
  nonResourceURLs?: string[];
}
interface KnativeService extends KubeObject {
  spec: {
    template: {
      metadata: { labels: Record<string, string>; annotations: Record<string, string> };
      spec: k8s.V1PodSpec & { containerConcurrency?: number; timeoutSeconds?: number };
    };
  };
}

/** kubectl from the control plane's build, with a discovery cache of this file's own. */
let kubectlCacheDir = '';
async function kubectl(args: string[], input?: string): Promise<string> {
  const kubeconfig = process.env.NPU_FAULT_TEST_KUBECONFIG ?? '';
  // A private discovery cache: kubectl must see the Knative types this file installs, not a
  // cached discovery another test file's kubectl took before they existed.
  const child = run(
    join(binDir(), 'kubectl'),
    [`--kubeconfig=${kubeconfig}`, `--cache-dir=${kubectlCacheDir}`, ...args],
    { maxBuffer: 32 * 1024 * 1024 },
  );
  if (input !== undefined) child.child.stdin?.end(input);
  const { stdout } = await child;
  return stdout;
}

async function render(dir: string): Promise<KubeObject[]> {
  const rendered = await kubectl(['kustomize', dir]);
  return parseAllDocuments(rendered).map((d) => d.toJS() as KubeObject);
}

function only<T extends KubeObject>(objects: KubeObject[], apiVersion: string, kind: string): T {
  const found = objects.filter((o) => o.apiVersion === apiVersion && o.kind === kind);
  expect(found.map((o) => o.metadata?.name)).toEqual([NAME]);
  return found[0] as T;
}

function kinds(objects: KubeObject[]): string[] {
  return objects.map((o) => `${o.apiVersion}/${o.kind}`).sort();
}

const isClusterScoped = (o: KubeObject): boolean => o.kind?.startsWith('Cluster') ?? false;

/** The objects moved into `namespace` (a dry run needs a namespace that exists). */
function intoNamespace(objects: KubeObject[], namespace: string): string {
  return objects
    .map((o) => {
      const copy = structuredClone(o);
      if (!isClusterScoped(copy)) copy.metadata = { ...copy.metadata, namespace };
      return stringify(copy);
    })
    .join('---\n');
}

/** A server-side apply dry run; resolves with kubectl's output, rejects with its error. */
async function dryRun(manifests: string): Promise<string> {
  return await kubectl(
    ['apply', '--dry-run=server', '--server-side', '--field-manager=npu-fault-test', '-f', '-'],
    manifests,
  );
}

function rulesOf(objects: KubeObject[], kind: 'Role' | 'ClusterRole'): Rule[] {
  return only<KubeObject & { rules: Rule[] }>(objects, 'rbac.authorization.k8s.io/v1', kind).rules;
}

describe('k8s/functions manifests', () => {
  let ns: TestNamespace;
  let base: KubeObject[];
  let knative: KubeObject[];

  beforeAll(async () => {
    kubectlCacheDir = await mkdtemp(join(tmpdir(), 'npu-fault-kubectl-cache-'));
    ns = await createTestNamespace('fn-manifests');
    base = await render(BASE);
    knative = await render(KNATIVE);
  });
  afterAll(async () => {
    await ns?.dispose();
    if (kubectlCacheDir) await rm(kubectlCacheDir, { recursive: true, force: true });
  });

  describe('the plain hosting (Deployment, Service, HorizontalPodAutoscaler)', () => {
    it('renders the function as the plan describes', () => {
      expect(kinds(base)).toEqual(
        [
          'apps/v1/Deployment',
          'autoscaling/v2/HorizontalPodAutoscaler',
          'policy/v1/PodDisruptionBudget',
          'rbac.authorization.k8s.io/v1/ClusterRole',
          'rbac.authorization.k8s.io/v1/ClusterRoleBinding',
          'rbac.authorization.k8s.io/v1/Role',
          'rbac.authorization.k8s.io/v1/RoleBinding',
          'v1/Service',
          'v1/ServiceAccount',
        ].sort(),
      );
      for (const object of base.filter((o) => !isClusterScoped(o)))
        expect(object.metadata?.namespace).toBe(SHIPPED_NAMESPACE);

      const deployment = only<k8s.V1Deployment & KubeObject>(base, 'apps/v1', 'Deployment');
      const pod = deployment.spec?.template.spec;
      const podLabels = deployment.spec?.template.metadata?.labels ?? {};
      const [container, ...others] = pod?.containers ?? [];
      expect(others).toHaveLength(0);
      expect(container?.args).toEqual(['function']);
      expect(pod?.serviceAccountName).toBe(NAME);
      // The autoscaler owns the count; see the comment in deployment.yaml.
      expect(deployment.spec?.replicas).toBeUndefined();
      const env = Object.fromEntries((container?.env ?? []).map((e) => [e.name, e]));
      expect(env.PORT?.value).toBe('8080');
      expect(env.NPU_FAULT_NAMESPACE?.valueFrom?.fieldRef?.fieldPath).toBe('metadata.namespace');
      expect(container?.ports).toEqual([{ name: 'http', containerPort: 8080, protocol: 'TCP' }]);
      expect(container?.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
      expect(container?.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
      expect(pod?.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532 });
      expect(container?.securityContext).toMatchObject({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
      expect(pod?.topologySpreadConstraints?.map((c) => c.topologyKey)).toContain('kubernetes.io/hostname');

      // The pieces point at each other.
      const service = only<k8s.V1Service & KubeObject>(base, 'v1', 'Service');
      expect(service.spec?.type).toBe('ClusterIP');
      expect(service.spec?.ports).toEqual([{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }]);
      expect(podLabels).toMatchObject(service.spec?.selector ?? { missing: 'selector' });
      const hpa = only<k8s.V2HorizontalPodAutoscaler & KubeObject>(
        base,
        'autoscaling/v2',
        'HorizontalPodAutoscaler',
      );
      expect(hpa.spec?.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: NAME });
      expect([hpa.spec?.minReplicas, hpa.spec?.maxReplicas]).toEqual([2, 10]);
      expect(hpa.spec?.metrics?.map((m) => m.resource?.name)).toEqual(['cpu']);
      const pdb = only<k8s.V1PodDisruptionBudget & KubeObject>(base, 'policy/v1', 'PodDisruptionBudget');
      expect(podLabels).toMatchObject(pdb.spec?.selector?.matchLabels ?? { missing: 'selector' });
      expect(deployment.spec?.selector.matchLabels).toEqual(pdb.spec?.selector?.matchLabels);
    });

    it('passes a server-side dry run', async () => {
      const out = await dryRun(intoNamespace(base, ns.name));
      for (const object of base) expect(out).toContain(`${object.metadata?.name} serverside-applied`);
      expect(out.trim().split('\n')).toHaveLength(base.length);
    });
  });

  describe('least privilege', () => {
    it('grants exactly the rules the function needs, with no wildcard', () => {
      expect(rulesOf(base, 'ClusterRole')).toEqual([
        { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
      ]);
      expect(rulesOf(base, 'Role')).toEqual([
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
        {
          apiGroups: ['coordination.k8s.io'],
          resources: ['leases'],
          resourceNames: ['npu-fault-controller'],
          verbs: ['get', 'list', 'watch'],
        },
      ]);
      for (const rule of [...rulesOf(base, 'ClusterRole'), ...rulesOf(base, 'Role')]) {
        for (const value of [rule.apiGroups, rule.resources, rule.resourceNames ?? [], rule.verbs].flat())
          expect(value).not.toContain('*');
        expect(rule.nonResourceURLs).toBeUndefined();
      }
      for (const kind of ['RoleBinding', 'ClusterRoleBinding'] as const) {
        const binding = only<k8s.V1RoleBinding & KubeObject>(base, 'rbac.authorization.k8s.io/v1', kind);
        expect(binding.roleRef).toEqual({
          apiGroup: 'rbac.authorization.k8s.io',
          kind: kind.replace('Binding', ''),
          name: NAME,
        });
        expect(binding.subjects).toEqual([
          { kind: 'ServiceAccount', name: NAME, namespace: SHIPPED_NAMESPACE },
        ]);
      }
    });

    it("is what the apiserver's authorizer grants the function's ServiceAccount, and no more", async () => {
      // The shipped RBAC, moved into the test namespace; the cluster-scoped objects get the
      // namespace in their names so that nothing is shared with another run.
      const objects = k8s.KubernetesObjectApi.makeApiClient(ns.admin);
      const rbac = base
        .filter((o) => o.apiVersion === 'rbac.authorization.k8s.io/v1')
        .map((o) => {
          const copy = structuredClone(o) as KubeObject & {
            roleRef?: { kind: string; name: string };
            subjects?: { namespace?: string }[];
          };
          if (isClusterScoped(copy)) copy.metadata = { ...copy.metadata, name: `${NAME}-${ns.name}` };
          else copy.metadata = { ...copy.metadata, namespace: ns.name };
          if (copy.roleRef?.kind === 'ClusterRole') copy.roleRef.name = `${NAME}-${ns.name}`;
          for (const subject of copy.subjects ?? []) subject.namespace = ns.name;
          return copy;
        });
      const authorization = ns.admin.makeApiClient(k8s.AuthorizationV1Api);
      const user = `system:serviceaccount:${ns.name}:${NAME}`;
      const groups = ['system:serviceaccounts', `system:serviceaccounts:${ns.name}`, 'system:authenticated'];
      const allowed = async (attributes: k8s.V1ResourceAttributes): Promise<boolean> => {
        const review = await authorization.createSubjectAccessReview({
          body: { spec: { user, groups, resourceAttributes: attributes } },
        });
        return review.status?.allowed === true;
      };
      const lease = { group: 'coordination.k8s.io', resource: 'leases', namespace: ns.name };
      const slices = { group: 'discovery.k8s.io', resource: 'endpointslices', namespace: ns.name };
      const needed: k8s.V1ResourceAttributes[] = [
        { group: 'authentication.k8s.io', resource: 'tokenreviews', verb: 'create' },
        { ...slices, verb: 'list' },
        { ...slices, verb: 'watch' },
        // A list or watch with fieldSelector metadata.name=… is authorised with that name.
        ...['get', 'list', 'watch'].map((verb) => ({ ...lease, verb, name: 'npu-fault-controller' })),
      ];
      const refused: k8s.V1ResourceAttributes[] = [
        { ...lease, verb: 'list' }, // every Lease in the namespace
        { ...lease, verb: 'get', name: 'another-lease' },
        { ...lease, verb: 'update', name: 'npu-fault-controller' },
        { ...lease, verb: 'create' },
        { ...slices, verb: 'get', name: 'npu-fault-controller-abcde' },
        { ...slices, verb: 'create' },
        { ...slices, namespace: 'default', verb: 'list' },
        { ...lease, namespace: 'kube-system', verb: 'get', name: 'npu-fault-controller' },
        { resource: 'secrets', namespace: ns.name, verb: 'list' },
        { resource: 'configmaps', namespace: ns.name, verb: 'get', name: 'npu-fault-status-v3' },
        { resource: 'pods', namespace: ns.name, verb: 'list' },
        { group: 'authorization.k8s.io', resource: 'subjectaccessreviews', verb: 'create' },
        { group: 'authentication.k8s.io', resource: 'tokenreviews', verb: 'delete' },
      ];
      // Before the RBAC exists, nothing that it grants is allowed (the check has teeth).
      for (const attributes of needed) expect(await allowed(attributes)).toBe(false);
      const created: KubeObject[] = [];
      try {
        for (const object of rbac) created.push((await objects.create(object)) as KubeObject);
        // The authorizer reads RBAC through its own watch caches, so new bindings take effect
        // a moment later, and nothing announces it: ask again until each answer turns, with a
        // deadline, rather than sleeping for a guessed time.
        const deadline = Date.now() + 30_000;
        for (const attributes of needed) {
          while (!(await allowed(attributes))) {
            if (Date.now() > deadline) throw new Error(`never allowed: ${JSON.stringify(attributes)}`);
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        }
        // Everything it grants is in effect now: these must stay refused.
        for (const attributes of refused) {
          expect([attributes, await allowed(attributes)]).toEqual([attributes, false]);
        }
      } finally {
        // All of it, the namespaced objects too: the dry runs in this namespace expect none.
        for (const object of created) await objects.delete(object).catch(() => undefined);
      }
    });
  });

  describe('the Knative overlay', () => {
    beforeAll(async () => {
      const dir = await findKnativeCrds((line) => process.stderr.write(`${line}\n`));
      const crds = await readKnativeCrds(dir);
      const api = ns.admin.makeApiClient(k8s.ApiextensionsV1Api);
      for (const crd of crds) {
        await api.createCustomResourceDefinition({ body: crd }).catch((error: { code?: number }) => {
          if (error.code !== 409) throw error; // AlreadyExists: installed earlier, kept as it is
        });
      }
      for (const crd of crds) {
        const name = crd.metadata?.name ?? '';
        await watchUntil<k8s.V1CustomResourceDefinition>(
          ns.admin,
          '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
          (object) =>
            object.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false,
          { fieldSelector: `metadata.name=${name}`, what: `CRD ${name} Established` },
        );
      }
      expect(crds.map((crd) => crd.metadata?.name)).toContain('services.serving.knative.dev');
    }, KNATIVE_FETCH_TIMEOUT_MS);

    it('replaces the Deployment, Service and HorizontalPodAutoscaler with a Knative Service', () => {
      expect(kinds(knative)).toEqual(
        [
          'policy/v1/PodDisruptionBudget',
          'rbac.authorization.k8s.io/v1/ClusterRole',
          'rbac.authorization.k8s.io/v1/ClusterRoleBinding',
          'rbac.authorization.k8s.io/v1/Role',
          'rbac.authorization.k8s.io/v1/RoleBinding',
          'serving.knative.dev/v1/Service',
          'v1/ServiceAccount',
        ].sort(),
      );
      for (const object of knative) {
        expect(object.metadata?.labels?.['app.kubernetes.io/part-of']).toBe('npu-fault');
        if (!isClusterScoped(object)) expect(object.metadata?.namespace).toBe(SHIPPED_NAMESPACE);
      }
      // The shared objects are the plain hosting's, unchanged but for the part-of label.
      for (const object of knative.filter((o) => o.kind !== 'Service')) {
        const twin = base.find((b) => b.kind === object.kind && b.metadata?.name === object.metadata?.name);
        const { 'app.kubernetes.io/part-of': _partOf, ...labels } = object.metadata?.labels ?? {};
        expect({ ...object, metadata: { ...object.metadata, labels } }).toEqual(twin);
      }
    });

    it('scales on concurrency, never below two replicas, and is reachable only in the cluster', () => {
      const service = only<KnativeService>(knative, 'serving.knative.dev/v1', 'Service');
      const annotations = service.spec.template.metadata.annotations;
      expect(annotations['autoscaling.knative.dev/class']).toBe('kpa.autoscaling.knative.dev');
      expect(annotations['autoscaling.knative.dev/metric']).toBe('concurrency');
      const target = Number(annotations['autoscaling.knative.dev/target']);
      const minScale = Number(annotations['autoscaling.knative.dev/min-scale']);
      const maxScale = Number(annotations['autoscaling.knative.dev/max-scale']);
      const concurrency = service.spec.template.spec.containerConcurrency ?? 0;
      expect(minScale).toBeGreaterThanOrEqual(2);
      expect(maxScale).toBeGreaterThanOrEqual(minScale);
      expect(target).toBeGreaterThan(0);
      expect(concurrency).toBeGreaterThanOrEqual(target);
      expect(service.metadata?.labels?.['networking.knative.dev/visibility']).toBe('cluster-local');
    });

    it('runs the same container as the Deployment, within what Knative admits by default', () => {
      const service = only<KnativeService>(knative, 'serving.knative.dev/v1', 'Service');
      const deployment = only<k8s.V1Deployment & KubeObject>(base, 'apps/v1', 'Deployment');
      const plainPod = deployment.spec?.template.spec as k8s.V1PodSpec;
      const [plain] = plainPod.containers;
      const pod = service.spec.template.spec;
      const [container, ...others] = pod.containers;
      expect(others).toHaveLength(0);
      expect(pod.serviceAccountName).toBe(plainPod.serviceAccountName);
      expect(container?.image).toBe(plain?.image);
      expect(container?.command).toEqual(plain?.command);
      expect(container?.args).toEqual(plain?.args);
      expect(container?.resources).toEqual(plain?.resources);
      expect(container?.volumeMounts).toEqual(plain?.volumeMounts);
      expect(pod.volumes).toEqual(plainPod.volumes);
      expect(container?.livenessProbe?.httpGet?.path).toBe(plain?.livenessProbe?.httpGet?.path);
      expect(container?.readinessProbe?.httpGet?.path).toBe(plain?.readinessProbe?.httpGet?.path);
      // Every security setting of the Deployment, pod-level ones moved onto the container.
      expect(container?.securityContext).toEqual({ ...plainPod.securityContext, ...plain?.securityContext });
      expect(service.spec.template.metadata.labels).toEqual(deployment.spec?.template.metadata?.labels);

      const plainEnv = new Map((plain?.env ?? []).map((e) => [e.name, e]));
      const env = new Map((container?.env ?? []).map((e) => [e.name, e]));
      expect(env.get('NODE_OPTIONS')).toEqual(plainEnv.get('NODE_OPTIONS'));
      // The V8 flags run node as the image does: its binary first, the script last.
      expect(plain?.command?.[0]).toBe('/nodejs/bin/node');
      expect(plain?.command?.at(-1)).toBe('dist/cli/run.js');
      expect(env.get('NPU_FAULT_NAMESPACE')?.value).toBe(SHIPPED_NAMESPACE);
      // Knative's webhook rules, which the dry run below cannot check without it:
      for (const name of KNATIVE_RESERVED_ENV) expect(env.has(name)).toBe(false);
      for (const variable of env.values()) expect(variable.valueFrom?.fieldRef).toBeUndefined();
      expect(container?.ports).toEqual([{ name: 'http1', containerPort: 8080, protocol: 'TCP' }]);
      expect(container?.livenessProbe?.httpGet?.port).toBeUndefined();
      expect(container?.readinessProbe?.httpGet?.port).toBeUndefined();
      expect(container?.startupProbe).toBeUndefined();
      expect(container?.lifecycle).toBeUndefined();
      for (const field of [
        'securityContext',
        'topologySpreadConstraints',
        'affinity',
        'terminationGracePeriodSeconds',
      ] as const)
        expect(pod[field]).toBeUndefined();
    });

    it('passes a server-side dry run against the Knative Serving CRDs', async () => {
      const out = await dryRun(intoNamespace(knative, ns.name));
      expect(out).toMatch(new RegExp(`^service\\.serving\\.knative\\.dev/${NAME} serverside-applied`, 'm'));
      expect(out.trim().split('\n')).toHaveLength(knative.length);
    });

    it("is refused by the dry run where it breaks Knative's schema (the check has teeth)", async () => {
      const service = only<KnativeService>(knative, 'serving.knative.dev/v1', 'Service');
      const misspelt = structuredClone(service) as KubeObject & { spec: { template: { spec: object } } };
      misspelt.metadata = { ...misspelt.metadata, namespace: ns.name };
      misspelt.spec.template.spec = { ...misspelt.spec.template.spec, containerConcurency: 50 };
      await expect(dryRun(stringify(misspelt))).rejects.toThrow(/containerConcurency/);
      const wrongType = structuredClone(service);
      wrongType.metadata = { ...wrongType.metadata, namespace: ns.name };
      (wrongType.spec.template.spec as { containerConcurrency: unknown }).containerConcurrency = 'fifty';
      await expect(dryRun(stringify(wrongType))).rejects.toThrow(/containerConcurrency/);
    });
  });
});

describe('findKnativeCrds (hack/knative-crds.sh) without Go', () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'npu-fault-knative-'));
    await mkdir(join(dir, 'bin'));
    // PATH holds only an empty folder of this test's making: no Go, nothing fetched.
    env = {
      PATH: join(dir, 'bin'),
      HOME: dir,
      NPU_FAULT_CACHE: join(dir, 'cache'),
      KNATIVE_SERVING_VERSION: 'v0.1.2',
    };
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('says what to install, in one line, when the cache is cold', async () => {
    const error = await findKnativeCrds(() => undefined, env).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(
      /^knative-crds\.sh failed \(exit 3\): error: Go is not installed .*knative\.dev\/serving.*Go >= 1\.24/,
    );
    expect(error?.message).not.toContain('\n');
  });

  it('needs no Go once the CRDs are cached', async () => {
    const cached = join(dir, 'cache', 'knative', 'v0.1.2');
    await mkdir(cached, { recursive: true });
    await writeFile(join(cached, 'service.yaml'), 'kind: CustomResourceDefinition\n');
    expect(await findKnativeCrds(() => undefined, env)).toBe(cached);
  });
});
