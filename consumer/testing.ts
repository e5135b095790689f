/**
 * Test support for consumers: a mounted ConfigMap directory written exactly the way the
 * kubelet's atomic writer (pkg/volume/util/atomic_writer.go) writes it, and documents to put
 * in it.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readlink, rename, rm, symlink, writeFile, lstat } from 'node:fs/promises';
import { join } from 'node:path';
import type { DeviceStatus, PublishedDevice, PublishedDocument, PublishedNode } from '../contracts/index.js';

const DATA_DIR = '..data';
const DATA_TMP = '..data_tmp';

/** `..2026_12_01_10_00_00.123456789`: Go's MkdirTemp with the kubelet's prefix. */
function timestampedDirName(now: Date): string {
  const pad = (n: number): string => String(n).padStart(2, '0');
  const stamp = `${now.getUTCFullYear()}_${pad(now.getUTCMonth() + 1)}_${pad(now.getUTCDate())}_${pad(now.getUTCHours())}_${pad(now.getUTCMinutes())}_${pad(now.getUTCSeconds())}`;
  return `..${stamp}.${randomBytes(4).readUInt32BE(0)}`;
}

/**
 * Writes `files` into `dir` as the atomic writer does: a new timestamped directory, a
 * `..data_tmp` symlink to it renamed over `..data`, a `key -> ..data/key` symlink per key
 * (created once), and the previous timestamped directory removed.
 */
export async function atomicWrite(
  dir: string,
  files: Record<string, string>,
  now = new Date(),
): Promise<void> {
  await mkdir(dir, { recursive: true });
  const previous = await readlink(join(dir, DATA_DIR)).catch(() => undefined);
  const tsDir = timestampedDirName(now);
  await mkdir(join(dir, tsDir));
  for (const [key, content] of Object.entries(files)) await writeFile(join(dir, tsDir, key), content);
  await rm(join(dir, DATA_TMP), { force: true });
  await symlink(tsDir, join(dir, DATA_TMP));
  await rename(join(dir, DATA_TMP), join(dir, DATA_DIR));
  for (const key of Object.keys(files)) {
    const exists = await lstat(join(dir, key)).then(
      () => true,
      () => false,
    );
    if (!exists) await symlink(join(DATA_DIR, key), join(dir, key));
  }
  if (previous && previous !== tsDir) await rm(join(dir, previous), { recursive: true, force: true });
}

/** A listed device. */
export function device(
  id: string,
  status: DeviceStatus,
  extra: Partial<PublishedDevice> = {},
): PublishedDevice {
  const n = Number(id.replace(/\D/g, '')) || 0;
  return {
    id,
    key: `0000:${(n + 1).toString(16).padStart(2, '0').toUpperCase()}:00.0`,
    resource_id: `Ascend910-${n}`,
    kind: 'npu',
    model: '910B2',
    status,
    since: '2026-12-01T10:00:00.000Z',
    reason: status === 'healthy' ? null : status === 'failed' ? 'pcie-link-down' : 'high-temp',
    reasons: status === 'healthy' ? [] : [status === 'failed' ? 'pcie-link-down' : 'high-temp'],
    signals: [],
    temperature_c: 50,
    power_w: 180,
    ecc_errors: 0,
    pcie_link_status: status === 'failed' ? 'down' : 'up',
    ...extra,
  };
}

/** A node entry listing `devices`. */
export function nodeEntry(node: string, devices: PublishedDevice[]): PublishedNode {
  const count = (s: DeviceStatus): number => devices.filter((d) => d.status === s).length;
  return {
    node,
    observed_at: '2026-12-01T10:00:00.000Z',
    agent: 'ok',
    summary: {
      total: 8,
      healthy: 8 - devices.length + count('healthy'),
      degraded: count('degraded'),
      failed: count('failed'),
      unknown: count('unknown'),
    },
    npus: devices,
  };
}

/**
 * A document at `timestamp` listing `nodes` of a 4-node, 32-device cluster: `cluster_summary`
 * counts the listed nodes' devices and the other nodes' as healthy, as the engine would.
 */
export function document(
  timestamp: Date | string,
  nodes: PublishedNode[] = [],
  extra: Partial<PublishedDocument> & Record<string, unknown> = {},
): PublishedDocument {
  const cluster = { total: 32, healthy: 32, degraded: 0, failed: 0, unknown: 0 };
  for (const { summary } of nodes) {
    cluster.healthy -= summary.total - summary.healthy;
    cluster.degraded += summary.degraded;
    cluster.failed += summary.failed;
    cluster.unknown += summary.unknown;
  }
  return {
    version: '3.0',
    timestamp: typeof timestamp === 'string' ? timestamp : timestamp.toISOString(),
    publisher: { identity: 'npu-fault-controller-0', term: 1 },
    node_count: 4,
    cluster_summary: cluster,
    unobserved: [],
    nodes: Object.fromEntries(nodes.map((n) => [n.node, n])),
    ...extra,
  } as PublishedDocument;
}

/** A clock that moves only when told (consumer/ may not import platform's FakeClock). */
export class ManualClock {
  #now: number;
  #timers: { at: number; seq: number; callback: () => void }[] = [];
  #seq = 0;
  constructor(start = Date.parse('2026-12-01T10:00:00.000Z')) {
    this.#now = start;
  }
  now(): number {
    return this.#now;
  }
  schedule(ms: number, callback: () => void): () => void {
    const timer = { at: this.#now + Math.max(0, ms), seq: this.#seq++, callback };
    this.#timers.push(timer);
    return () => {
      this.#timers = this.#timers.filter((t) => t !== timer);
    };
  }
  /** Moves time forward, firing every timer that falls due, in order. */
  advance(ms: number): void {
    const end = this.#now + ms;
    for (;;) {
      const due = this.#timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.#timers = this.#timers.filter((t) => t !== due);
      this.#now = due.at;
      due.callback();
    }
    this.#now = end;
  }
}

/** Resolves with the first value `subscribe` delivers that satisfies `predicate`; rejects after `timeoutMs`. */
export function waitFor<T>(
  subscribe: (listener: (value: T) => void) => () => void,
  predicate: (value: T) => boolean,
  what: string,
  timeoutMs = 5_000,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      remove();
      reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
    }, timeoutMs);
    const remove = subscribe((value) => {
      if (!predicate(value)) return;
      clearTimeout(timer);
      remove();
      resolve(value);
    });
  });
}
