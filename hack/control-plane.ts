/**
 * A real Kubernetes control plane on loopback for tests and local runs: etcd,
 * kube-apiserver, kube-controller-manager and kwok (fake kubelets), built from Go modules by
 * hack/build-control-plane.sh and cached outside the repository.
 *
 * `startControlPlane` spawns the processes detached (so `npm run cluster:up` can return and
 * leave them running), waits until the apiserver's /readyz answers, the controller-manager
 * has created the default ServiceAccount and kwok's /healthz answers, then writes
 * `<stateDir>/kubeconfig` and `<stateDir>/state.json`. `stopControlPlane` kills them and
 * removes all state, etcd's data included.
 *
 * Authentication: a static token file (admin in system:masters, the controller-manager as
 * system:kube-controller-manager) plus ServiceAccount tokens signed with a generated key, so
 * tests can mint TokenRequest tokens and run components under their real RBAC.
 * TLS: the apiserver generates its own self-signed serving certificate in its cert dir; the
 * kubeconfig trusts exactly that certificate.
 */
import { execFile, spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync, statfsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile, open } from 'node:fs/promises';
import { request } from 'node:https';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** What a running control plane left behind in its state directory. */
export interface ControlPlaneState {
  stateDir: string;
  kubeconfig: string;
  server: string;
  adminToken: string;
  /** PEM of the apiserver's serving certificate chain (trusted by the kubeconfig). */
  caPem: string;
  etcdDataDir: string;
  pids: Record<string, number>;
  ports: Record<string, number>;
  binDir: string;
  /** The process that started the plane (a test run whose owner is gone is a leftover). */
  ownerPid: number;
}

export interface StartOptions {
  /** Where certs, tokens, logs and the kubeconfig go; created if missing. */
  stateDir: string;
  /**
   * Start the processes in their own process groups, so they outlive this process
   * (`npm run cluster:up`). Tests leave it false: a Ctrl-C then reaches them too.
   */
  detached?: boolean;
  /** Progress lines (stderr by default). */
  log?: (line: string) => void;
  /** Give up waiting for readiness after this long. */
  timeoutMs?: number;
}

/** Runs hack/build-control-plane.sh (a no-op when the cache is warm) and returns the bin dir. */
export async function buildControlPlane(log: (line: string) => void): Promise<string> {
  const script = join(repoRoot, 'hack', 'build-control-plane.sh');
  return await new Promise((resolvePromise, reject) => {
    const child = spawn('bash', [script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
      for (const line of chunk.toString().split('\n'))
        if (line.startsWith('[build-control-plane]')) log(line);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolvePromise(out.trim().split('\n').pop() ?? '');
      else
        reject(
          new Error(
            `build-control-plane.sh failed (exit ${code}): ${err.trim().split('\n').slice(-3).join(' | ')}`,
          ),
        );
    });
  });
}

async function freePort(): Promise<number> {
  return await new Promise((resolvePromise, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePromise(port));
    });
  });
}

async function spawnLogged(
  binary: string,
  args: string[],
  logFile: string,
  detached: boolean,
): Promise<number> {
  const handle = await open(logFile, 'a');
  const child = spawn(binary, args, { detached, stdio: ['ignore', handle.fd, handle.fd] });
  child.unref();
  await handle.close();
  if (child.pid === undefined) throw new Error(`could not start ${binary}`);
  return child.pid;
}

function hasRoom(dir: string, bytes: number): boolean {
  try {
    const fs = statfsSync(dir);
    return fs.bavail * fs.bsize >= bytes;
  } catch {
    return false;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

interface Probe {
  status: number;
  body: string;
}

/** One GET with a short timeout; never rejects (status 0 and the error text on failure). */
function probe(url: string, auth?: { token: string; caPem: string | undefined }): Promise<Probe> {
  return new Promise((resolvePromise) => {
    const onResponse = (res: IncomingMessage): void => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolvePromise({ status: res.statusCode ?? 0, body }));
    };
    const req = auth
      ? request(
          url,
          {
            headers: { Authorization: `Bearer ${auth.token}` },
            ca: auth.caPem,
            // Before the apiserver's self-signed certificate exists there is nothing to trust yet.
            rejectUnauthorized: auth.caPem !== undefined,
            timeout: 2000,
          },
          onResponse,
        )
      : httpRequest(url, { timeout: 2000 }, onResponse);
    req.on('error', (e) => resolvePromise({ status: 0, body: e.message }));
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

/** Polls `check` until it returns true; fails with the last detail and the log tail. */
async function waitFor(
  what: string,
  check: () => Promise<true | string>,
  deadline: number,
  pid: number,
  logFile: string,
): Promise<void> {
  let last = '';
  while (Date.now() < deadline) {
    const result = await check();
    if (result === true) return;
    last = result;
    if (!isAlive(pid)) break;
    await new Promise((r) => setTimeout(r, 200)); // polling an external process: nothing to await on
  }
  const tail = existsSync(logFile) ? (await readFile(logFile, 'utf8')).split('\n').slice(-15).join('\n') : '';
  throw new Error(
    `${what} did not become ready (${isAlive(pid) ? 'timed out' : 'process exited'}; last: ${last})\n${tail}`,
  );
}

function kubeconfigYaml(server: string, caPem: string, user: string, token: string): string {
  const ca = Buffer.from(caPem).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: npu-fault-local',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${ca}`,
    'users:',
    `- name: ${user}`,
    '  user:',
    `    token: ${token}`,
    'contexts:',
    '- name: npu-fault-local',
    '  context:',
    '    cluster: npu-fault-local',
    `    user: ${user}`,
    'current-context: npu-fault-local',
    '',
  ].join('\n');
}

/**
 * Starts etcd, kube-apiserver, kube-controller-manager and kwok; resolves once all are ready.
 * If any step fails, whatever was already started is stopped again (no leaked processes).
 */
export async function startControlPlane(options: StartOptions): Promise<ControlPlaneState> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startProcesses(options);
    } catch (error) {
      await stopControlPlane(options.stateDir).catch(() => undefined);
      // Free ports are picked before the processes bind them; another process may take one
      // in between. That is worth another try with fresh ports, anything else is not.
      const portTaken = error instanceof Error && /address already in use/i.test(error.message);
      if (!portTaken || attempt >= 3) throw error;
    }
  }
}

async function startProcesses(options: StartOptions): Promise<ControlPlaneState> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const detached = options.detached ?? false;
  const stateDir = resolve(options.stateDir);
  await stopControlPlane(stateDir).catch(() => undefined);
  const binDir = await buildControlPlane(log);
  // The readiness deadline starts after the (possibly cold, minutes-long) build.
  const deadline = Date.now() + (options.timeoutMs ?? 120_000);
  await mkdir(join(stateDir, 'logs'), { recursive: true });
  await mkdir(join(stateDir, 'certs'), { recursive: true });

  // etcd keeps its data on tmpfs when there is room (a container's default /dev/shm is only
  // 64 MiB); it is thrown away at `down` anyway.
  const shm = hasRoom('/dev/shm', 1024 * 1024 * 1024) ? '/dev/shm' : tmpdir();
  const etcdDataDir = await mkdtemp(join(shm, 'npu-fault-etcd-'));
  const ports = {
    etcd: await freePort(),
    etcdPeer: await freePort(),
    apiserver: await freePort(),
    kwok: await freePort(),
  };
  const pids: Record<string, number> = {};
  const state: ControlPlaneState = {
    stateDir,
    kubeconfig: join(stateDir, 'kubeconfig'),
    server: `https://127.0.0.1:${ports.apiserver}`,
    adminToken: randomBytes(24).toString('hex'),
    caPem: '',
    etcdDataDir,
    pids,
    ports,
    binDir,
    ownerPid: process.pid,
  };
  const saveState = (): Promise<void> =>
    writeFile(join(stateDir, 'state.json'), JSON.stringify(state, null, 2));
  await saveState(); // from here on, stopControlPlane can find and remove everything

  // ServiceAccount token signing key.
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  await writeFile(join(stateDir, 'certs', 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
  await writeFile(join(stateDir, 'certs', 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
  const kcmToken = randomBytes(24).toString('hex');
  await writeFile(
    join(stateDir, 'certs', 'tokens.csv'),
    `${state.adminToken},admin,admin-uid,"system:masters"\n` +
      `${kcmToken},system:kube-controller-manager,kcm-uid\n`,
    { mode: 0o600 },
  );

  const logOf = (name: string): string => join(stateDir, 'logs', `${name}.log`);
  log(`[control-plane] etcd on 127.0.0.1:${ports.etcd} (data ${etcdDataDir})`);
  pids.etcd = await spawnLogged(
    join(binDir, 'etcd'),
    [
      '--name=npu-fault',
      `--data-dir=${etcdDataDir}`,
      `--listen-client-urls=http://127.0.0.1:${ports.etcd}`,
      `--advertise-client-urls=http://127.0.0.1:${ports.etcd}`,
      `--listen-peer-urls=http://127.0.0.1:${ports.etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${ports.etcdPeer}`,
      `--initial-cluster=npu-fault=http://127.0.0.1:${ports.etcdPeer}`,
      '--unsafe-no-fsync',
      '--log-level=warn',
      '--quota-backend-bytes=4294967296',
    ],
    logOf('etcd'),
    detached,
  );
  await saveState();
  await waitFor(
    'etcd',
    async () => {
      const r = await probe(`http://127.0.0.1:${ports.etcd}/health`);
      return r.status === 200 && r.body.includes('true') ? true : `${r.status} ${r.body}`;
    },
    deadline,
    pids.etcd,
    logOf('etcd'),
  );

  log(`[control-plane] kube-apiserver on ${state.server}`);
  const certDir = join(stateDir, 'certs', 'apiserver');
  pids.apiserver = await spawnLogged(
    join(binDir, 'kube-apiserver'),
    [
      `--etcd-servers=http://127.0.0.1:${ports.etcd}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${ports.apiserver}`,
      `--cert-dir=${certDir}`,
      `--token-auth-file=${join(stateDir, 'certs', 'tokens.csv')}`,
      '--authorization-mode=RBAC',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${join(stateDir, 'certs', 'sa.pub')}`,
      `--service-account-signing-key-file=${join(stateDir, 'certs', 'sa.key')}`,
      '--service-cluster-ip-range=10.96.0.0/16',
      '--allow-privileged=true',
      '--profiling=false',
      '--endpoint-reconciler-type=none',
      '--enable-priority-and-fairness=false',
    ],
    logOf('kube-apiserver'),
    detached,
  );
  await saveState();
  await waitFor(
    'kube-apiserver',
    async () => {
      const r = await probe(`${state.server}/readyz`, { token: state.adminToken, caPem: undefined });
      return r.status === 200 ? true : `${r.status} ${r.body.slice(0, 200)}`;
    },
    deadline,
    pids.apiserver,
    logOf('kube-apiserver'),
  );
  state.caPem = await readFile(join(certDir, 'apiserver.crt'), 'utf8');
  // Prove the kubeconfig's trust anchor really verifies the server before handing it out.
  const verified = await probe(`${state.server}/version`, { token: state.adminToken, caPem: state.caPem });
  if (verified.status !== 200) throw new Error(`apiserver certificate does not verify: ${verified.body}`);
  await writeFile(state.kubeconfig, kubeconfigYaml(state.server, state.caPem, 'admin', state.adminToken), {
    mode: 0o600,
  });
  const kcmKubeconfig = join(stateDir, 'kcm.kubeconfig');
  await writeFile(
    kcmKubeconfig,
    kubeconfigYaml(state.server, state.caPem, 'kube-controller-manager', kcmToken),
    {
      mode: 0o600,
    },
  );

  log('[control-plane] kube-controller-manager (node-lifecycle controller off)');
  pids.kcm = await spawnLogged(
    join(binDir, 'kube-controller-manager'),
    [
      `--kubeconfig=${kcmKubeconfig}`,
      '--controllers=*,-node-lifecycle-controller,-node-ipam-controller,-cloud-node-lifecycle-controller',
      '--leader-elect=false',
      '--secure-port=0',
      `--service-account-private-key-file=${join(stateDir, 'certs', 'sa.key')}`,
      `--root-ca-file=${join(certDir, 'apiserver.crt')}`,
      '--use-service-account-credentials=true', // each controller acts under its own RBAC
      '--concurrent-gc-syncs=5',
    ],
    logOf('kube-controller-manager'),
    detached,
  );
  await saveState();
  await waitFor(
    'kube-controller-manager',
    async () => {
      const r = await probe(`${state.server}/api/v1/namespaces/default/serviceaccounts/default`, {
        token: state.adminToken,
        caPem: state.caPem,
      });
      return r.status === 200 ? true : `default ServiceAccount: ${r.status}`;
    },
    deadline,
    pids.kcm,
    logOf('kube-controller-manager'),
  );

  log(`[control-plane] kwok (nodes annotated kwok.x-k8s.io/node=fake), server 127.0.0.1:${ports.kwok}`);
  pids.kwok = await spawnLogged(
    join(binDir, 'kwok'),
    [
      `--kubeconfig=${state.kubeconfig}`,
      `--config=${join(binDir, 'kwok-stages.yaml')}`,
      '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
      `--server-address=127.0.0.1:${ports.kwok}`,
      '--cidr=10.244.0.0/16',
      '--node-ip=127.0.0.1',
    ],
    logOf('kwok'),
    detached,
  );
  await saveState();
  await waitFor(
    'kwok',
    async () => {
      const r = await probe(`http://127.0.0.1:${ports.kwok}/healthz`);
      return r.status === 200 ? true : `${r.status} ${r.body.slice(0, 100)}`;
    },
    deadline,
    pids.kwok,
    logOf('kwok'),
  );
  log(`[control-plane] ready: KUBECONFIG=${state.kubeconfig}`);
  return state;
}

/** True when the plane in `stateDir` was started by a process that no longer runs. */
export async function isOrphaned(stateDir: string): Promise<boolean> {
  const state = await readControlPlaneState(stateDir).catch(() => undefined);
  return state !== undefined && !isAlive(state.ownerPid);
}

/** Reads the state a running control plane left in `stateDir`, or undefined. */
export async function readControlPlaneState(stateDir: string): Promise<ControlPlaneState | undefined> {
  const file = join(resolve(stateDir), 'state.json');
  if (!existsSync(file)) return undefined;
  return JSON.parse(await readFile(file, 'utf8')) as ControlPlaneState;
}

/** Stops every process of the control plane in `stateDir` and removes its state. Idempotent. */
export async function stopControlPlane(stateDir: string): Promise<void> {
  const state = await readControlPlaneState(stateDir);
  if (state) {
    // Reverse start order: clients first, etcd last.
    for (const name of STOP_ORDER) {
      const pid = state.pids[name];
      if (pid === undefined || !isOurs(pid, state)) continue;
      process.kill(pid, 'SIGTERM');
      const until = Date.now() + 10_000;
      while (isAlive(pid) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
      if (isAlive(pid)) process.kill(pid, 'SIGKILL');
    }
    await rm(state.etcdDataDir, { recursive: true, force: true });
  }
  await rm(resolve(stateDir), { recursive: true, force: true });
}

const STOP_ORDER = ['kwok', 'kcm', 'apiserver', 'etcd'];

/**
 * True when `pid` is still one of this control plane's processes. A stale state.json (after
 * a reboot, or a run killed without teardown) may name pids that now belong to something
 * else, which must never be signalled.
 */
function isOurs(pid: number, state: ControlPlaneState): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith(state.binDir + '/');
  } catch {
    return false; // gone (or no /proc): nothing to stop
  }
}

/**
 * Last-resort cleanup for a process that is exiting (a Ctrl-C or SIGTERM of the test
 * runner, when no async teardown can run): SIGKILLs the control plane of `stateDir` and
 * removes its state, synchronously.
 */
export function killControlPlaneSync(stateDir: string): void {
  let state: ControlPlaneState;
  try {
    state = JSON.parse(readFileSync(join(resolve(stateDir), 'state.json'), 'utf8')) as ControlPlaneState;
  } catch {
    return;
  }
  for (const name of STOP_ORDER) {
    const pid = state.pids[name];
    if (pid !== undefined && isOurs(pid, state)) process.kill(pid, 'SIGKILL');
  }
  rmSync(state.etcdDataDir, { recursive: true, force: true });
  rmSync(resolve(stateDir), { recursive: true, force: true });
}

/** Runs the cached kubectl against the control plane (for `kubectl kustomize` and dry runs). */
export async function kubectl(
  state: Pick<ControlPlaneState, 'binDir' | 'kubeconfig'>,
  args: string[],
): Promise<string> {
  const { stdout } = await execFileAsync(
    join(state.binDir, 'kubectl'),
    [`--kubeconfig=${state.kubeconfig}`, ...args],
    {
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  return stdout;
}
