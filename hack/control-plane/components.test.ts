import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import {
  COMPONENTS,
  checkNodeLifecycleOptions,
  type ComponentSpec,
  type NodeLifecycleOptions,
  type Plane,
} from './components.js';
import { planePaths, type ControlPlaneState } from './state.js';

const paths = planePaths('/run/plane');
const state: ControlPlaneState = {
  stateDir: paths.stateDir,
  kubeconfig: paths.adminKubeconfig,
  server: 'https://127.0.0.1:30002',
  adminToken: 'admin-token',
  caPem: '',
  etcdDataDir: '/dev/shm/npu-fault-etcd-x',
  pids: {},
  ports: { etcd: 30000, etcdPeer: 30001, apiserver: 30002, kwok: 30003 },
  binDir: '/cache/bin',
  ownerPid: 1,
};
const plane: Plane = {
  state,
  paths,
  tokens: { admin: 'admin-token', controllerManager: 'kcm-token' },
  kubernetesMinor: 37,
};

function component(name: string): ComponentSpec {
  const found = COMPONENTS.find((c) => c.name === name);
  if (!found) throw new Error(`no component ${name}`);
  return found;
}

/** The value of `--flag=value` in `name`'s arguments (on `on`, the default plane unless given). */
function flag(name: string, flagName: string, on: Plane = plane): string | undefined {
  const prefix = `--${flagName}=`;
  return component(name)
    .args(on)
    .find((arg) => arg.startsWith(prefix))
    ?.slice(prefix.length);
}

/** kube-controller-manager's --controllers list on a plane with `nodeLifecycle` (of 1.37 unless given). */
function controllers(nodeLifecycle?: NodeLifecycleOptions, kubernetesMinor = 37): string[] {
  return (
    flag('kube-controller-manager', 'controllers', { ...plane, nodeLifecycle, kubernetesMinor })?.split(
      ',',
    ) ?? []
  );
}

describe('the component table', () => {
  it('starts exactly the servers build-control-plane.sh builds, each after what it depends on', () => {
    const script = readFileSync(new URL('../build-control-plane.sh', import.meta.url), 'utf8');
    const built = /^WANTED=\(([^)]*)\)/m.exec(script)?.[1]?.split(/\s+/) ?? [];
    const servers = built.filter((name) => name !== 'kubectl' && !name.endsWith('.yaml'));

    expect(COMPONENTS.map((c) => c.name)).toEqual([
      'etcd',
      'kube-apiserver',
      'kube-controller-manager',
      'kwok',
    ]);
    expect([...servers].sort()).toEqual(COMPONENTS.map((c) => c.name).sort());
  });

  it('points every client at the address or file its server uses', () => {
    expect(flag('kube-apiserver', 'etcd-servers')).toBe(flag('etcd', 'advertise-client-urls'));
    expect(flag('etcd', 'listen-client-urls')).toBe(`http://127.0.0.1:${state.ports.etcd}`);
    expect(flag('kube-apiserver', 'secure-port')).toBe(String(state.ports.apiserver));
    expect(flag('kube-controller-manager', 'kubeconfig')).toBe(paths.controllerManagerKubeconfig);
    expect(flag('kube-controller-manager', 'service-account-private-key-file')).toBe(
      flag('kube-apiserver', 'service-account-signing-key-file'),
    );
    expect(flag('kube-controller-manager', 'root-ca-file')).toBe(paths.apiserverCert);
    expect(paths.apiserverCert.startsWith(`${flag('kube-apiserver', 'cert-dir')}/`)).toBe(true);
    expect(flag('kwok', 'kubeconfig')).toBe(state.kubeconfig);
    expect(flag('kwok', 'server-address')).toBe(`127.0.0.1:${state.ports.kwok}`);
  });

  it("keeps etcd's data where the plane put it, and says where (a failed start's test finds it there)", () => {
    expect(flag('etcd', 'data-dir')).toBe(state.etcdDataDir);
    expect(component('etcd').announce(plane)).toContain(`(data ${state.etcdDataDir})`);
  });
});

describe("kube-controller-manager's node-lifecycle controller", () => {
  const withLifecycle = (nodeLifecycle: NodeLifecycleOptions): Plane => ({ ...plane, nodeLifecycle });

  it('is off unless asked for, with every other controller as before', () => {
    expect(controllers()).toEqual(['*', '-node-lifecycle-controller', '-node-ipam-controller']);
    expect(flag('kube-controller-manager', 'node-monitor-grace-period')).toBeUndefined();
    expect(component('kube-controller-manager').announce(plane)).toContain('node-lifecycle controller off');
  });

  it('runs when asked for, and only it changes', () => {
    expect(controllers({})).toEqual(['*', '-node-ipam-controller']);
    const kcm = component('kube-controller-manager');
    const without = (args: string[]) => args.filter((arg) => !arg.startsWith('--controllers='));
    expect(without(kcm.args(withLifecycle({})))).toEqual(without(kcm.args(plane)));
    expect(kcm.announce(withLifecycle({}))).toContain('node-lifecycle controller on, grace default');
  });

  it('leaves the grace period at the upstream default unless given, and passes it in seconds when given', () => {
    expect(flag('kube-controller-manager', 'node-monitor-grace-period', withLifecycle({}))).toBeUndefined();
    const short = withLifecycle({ gracePeriodSeconds: 8 });
    expect(flag('kube-controller-manager', 'node-monitor-grace-period', short)).toBe('8s');
    expect(component('kube-controller-manager').announce(short)).toContain('grace 8s');
  });

  it('refuses a grace period that is not a positive whole number of seconds, naming the field', () => {
    for (const bad of [0, -5, 2.5, Number.NaN]) {
      expect(() => checkNodeLifecycleOptions({ gracePeriodSeconds: bad })).toThrow(
        /^nodeLifecycle\.gracePeriodSeconds: expected a positive whole number/,
      );
      expect(() =>
        component('kube-controller-manager').args(withLifecycle({ gracePeriodSeconds: bad })),
      ).toThrow(/nodeLifecycle\.gracePeriodSeconds/);
    }
    expect(() => checkNodeLifecycleOptions({ gracePeriodSeconds: 50 })).not.toThrow();
    expect(() => checkNodeLifecycleOptions({})).not.toThrow();
  });
});

describe("kube-controller-manager's controllers on each supported release", () => {
  it('turns the cloud node lifecycle controller off where it exists (before 1.37) and names it nowhere else', () => {
    // 1.37 refuses to start on an unknown name in --controllers; 1.34 would run the controller
    // against a cloud that is not there.
    expect(controllers(undefined, 34)).toEqual([
      '*',
      '-node-lifecycle-controller',
      '-node-ipam-controller',
      '-cloud-node-lifecycle-controller',
    ]);
    expect(controllers(undefined, 36)).toContain('-cloud-node-lifecycle-controller');
    expect(controllers(undefined, 37)).not.toContain('-cloud-node-lifecycle-controller');
    expect(controllers({}, 34)).toEqual(['*', '-node-ipam-controller', '-cloud-node-lifecycle-controller']);
  });
});
