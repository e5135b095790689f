/**
 * Who may talk to the plane, and how they trust it: a static token file (admin in
 * system:masters, the controller-manager as system:kube-controller-manager), the key pair that
 * signs ServiceAccount tokens (so tests can mint TokenRequest tokens and run components under
 * their real RBAC), and kubeconfigs that trust exactly the apiserver's self-signed certificate.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { stringify } from 'yaml';
import type { PlanePaths } from './state.js';
import { probe } from './processes.js';

/** The static bearer tokens of one plane. */
export interface PlaneTokens {
  admin: string;
  controllerManager: string;
}

/** Fresh random tokens; each plane gets its own. */
export function newPlaneTokens(): PlaneTokens {
  return { admin: randomBytes(24).toString('hex'), controllerManager: randomBytes(24).toString('hex') };
}

/** Writes the ServiceAccount signing key pair and the apiserver's static token file. */
export async function writeAuthFiles(paths: PlanePaths, tokens: PlaneTokens): Promise<void> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  // Secrets are readable by their owner only (the plane runs as that user).
  await writeFile(paths.serviceAccountKey, privateKey.export({ type: 'pkcs8', format: 'pem' }), {
    mode: 0o600,
  });
  await writeFile(paths.serviceAccountPublicKey, publicKey.export({ type: 'spki', format: 'pem' }));
  await writeFile(
    paths.tokenFile,
    `${tokens.admin},admin,admin-uid,"system:masters"\n` +
      `${tokens.controllerManager},system:kube-controller-manager,kcm-uid\n`,
    { mode: 0o600 },
  );
}

/**
 * Reads the serving certificate the apiserver generated for itself and proves that it
 * verifies the server before any kubeconfig hands it out as the trust anchor.
 */
export async function readVerifiedApiserverCertificate(
  certFile: string,
  server: string,
  token: string,
): Promise<string> {
  const caPem = await readFile(certFile, 'utf8');
  const verified = await probe(`${server}/version`, { token, caPem });
  if (verified.status !== 200) throw new Error(`apiserver certificate does not verify: ${verified.body}`);
  return caPem;
}

/** One user's access to the plane. */
export interface KubeconfigUser {
  server: string;
  caPem: string;
  user: string;
  token: string;
}

/** A kubeconfig with one cluster, one token user and one context, as YAML. */
export function kubeconfigYaml({ server, caPem, user, token }: KubeconfigUser): string {
  const kubeconfig = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'npu-fault-local',
        cluster: { server, 'certificate-authority-data': Buffer.from(caPem).toString('base64') },
      },
    ],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: 'npu-fault-local', context: { cluster: 'npu-fault-local', user } }],
    'current-context': 'npu-fault-local',
  };
  return stringify(kubeconfig, { lineWidth: 0 });
}

/** Writes `kubeconfigYaml(access)` to `file`, readable by its owner only (it holds a token). */
export async function writeKubeconfig(file: string, access: KubeconfigUser): Promise<void> {
  await writeFile(file, kubeconfigYaml(access), { mode: 0o600 });
}
