/**
 * Where a control plane lives: the layout of its state directory, the state.json that lets a
 * later process stop it, the loopback ports and etcd data directory it was given, and whether
 * the process that started it is gone.
 */
import { existsSync, readFileSync, statfsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { isAlive } from './processes.js';

/** The loopback ports of one plane, chosen free when it starts. */
export interface PlanePorts {
  etcd: number;
  etcdPeer: number;
  apiserver: number;
  kwok: number;
}

/** What a running control plane left behind in its state directory. */
export interface ControlPlaneState {
  stateDir: string;
  kubeconfig: string;
  server: string;
  adminToken: string;
  /** PEM of the apiserver's serving certificate chain (trusted by the kubeconfig). */
  caPem: string;
  etcdDataDir: string;
  /** Pid of each started process by component name, in start order. */
  pids: Record<string, number>;
  ports: PlanePorts;
  binDir: string;
  /** The process that started the plane (a test run whose owner is gone is a leftover). */
  ownerPid: number;
}

/** Every file a plane keeps in its state directory. */
export interface PlanePaths {
  stateDir: string;
  stateFile: string;
  logDir: string;
  certDir: string;
  /** The apiserver writes its self-signed serving certificate here. */
  apiserverCertDir: string;
  apiserverCert: string;
  serviceAccountKey: string;
  serviceAccountPublicKey: string;
  tokenFile: string;
  adminKubeconfig: string;
  controllerManagerKubeconfig: string;
}

/** The layout of the state directory `stateDir` (resolved to an absolute path). */
export function planePaths(stateDir: string): PlanePaths {
  const dir = resolve(stateDir);
  const certDir = join(dir, 'certs');
  const apiserverCertDir = join(certDir, 'apiserver');
  return {
    stateDir: dir,
    stateFile: join(dir, 'state.json'),
    logDir: join(dir, 'logs'),
    certDir,
    apiserverCertDir,
    apiserverCert: join(apiserverCertDir, 'apiserver.crt'),
    serviceAccountKey: join(certDir, 'sa.key'),
    serviceAccountPublicKey: join(certDir, 'sa.pub'),
    tokenFile: join(certDir, 'tokens.csv'),
    adminKubeconfig: join(dir, 'kubeconfig'),
    controllerManagerKubeconfig: join(dir, 'kcm.kubeconfig'),
  };
}

/** The log file of the component `name`. */
export function logFileOf(paths: PlanePaths, name: string): string {
  return join(paths.logDir, `${name}.log`);
}

/** Writes state.json; from the first write on, stopControlPlane can find and remove everything. */
export async function writeControlPlaneState(state: ControlPlaneState): Promise<void> {
  await writeFile(planePaths(state.stateDir).stateFile, JSON.stringify(state, null, 2));
}

/** Reads the state a running control plane left in `stateDir`, or undefined. */
export async function readControlPlaneState(stateDir: string): Promise<ControlPlaneState | undefined> {
  const file = planePaths(stateDir).stateFile;
  if (!existsSync(file)) return undefined;
  return JSON.parse(await readFile(file, 'utf8')) as ControlPlaneState;
}

/**
 * Reads state.json synchronously, for a process that is exiting; undefined when it is
 * missing or unreadable (an exit handler has nobody left to report an error to).
 */
export function readControlPlaneStateSync(stateDir: string): ControlPlaneState | undefined {
  try {
    return JSON.parse(readFileSync(planePaths(stateDir).stateFile, 'utf8')) as ControlPlaneState;
  } catch {
    return undefined;
  }
}

/** True when the plane in `stateDir` was started by a process that no longer runs. */
export async function isOrphaned(stateDir: string): Promise<boolean> {
  const state = await readControlPlaneState(stateDir).catch(() => undefined);
  return state !== undefined && !isAlive(state.ownerPid);
}

/**
 * Distinct free loopback ports, one per name. All are held open until every one is chosen, so
 * no two names get the same port; another process may still take one before the plane binds
 * it, which startControlPlane answers with a retry.
 */
export async function freeLoopbackPorts<Name extends string>(
  names: readonly Name[],
): Promise<Record<Name, number>> {
  const servers = await Promise.all(names.map(() => listenOnFreePort()));
  const ports = servers.map((server) => {
    const address = server.address();
    return typeof address === 'object' && address ? address.port : 0;
  });
  await Promise.all(servers.map((server) => new Promise((done) => server.close(done))));
  return Object.fromEntries(names.map((name, i) => [name, ports[i]])) as Record<Name, number>;
}

function listenOnFreePort(): Promise<Server> {
  return new Promise((resolvePromise, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => resolvePromise(server));
  });
}

const ETCD_TMPFS_MIN_FREE_BYTES = 1024 * 1024 * 1024;

/**
 * Where etcd's data directory goes: tmpfs (/dev/shm) when it has at least 1 GiB free, for
 * speed; otherwise the temp dir, because a container's default /dev/shm is only 64 MiB. The
 * data is thrown away at `down` anyway.
 */
export function etcdDataParent(): string {
  return hasRoom('/dev/shm', ETCD_TMPFS_MIN_FREE_BYTES) ? '/dev/shm' : tmpdir();
}

function hasRoom(dir: string, bytes: number): boolean {
  try {
    const fs = statfsSync(dir);
    return fs.bavail * fs.bsize >= bytes;
  } catch {
    return false;
  }
}
