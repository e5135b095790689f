/**
 * A MindCluster view as npu-fault's own observations (pure):
 * - `healthOf`: MindCluster's verdict on one device as an hdc health word: Critical when it is
 *   in the Unhealthy or ManuallySeparateNPU list or a fault entry separates it (SeparateNPU,
 *   ManuallySeparateNPU); Warning when it is NetworkUnhealthy or Recovering or a fault entry
 *   asks for anything short of that (PreSeparateNPU, RestartNPU, FreeRestartNPU,
 *   RestartBusiness, RestartRequest, SubHealthFault, or a level unknown here); else OK.
 * - `snapshotOf`: a synthetic hdc.health/v1 snapshot of the view's family for a node without
 *   an agent. Readings MindCluster does not carry (temperature, power, memory, ECC, link) are
 *   left out, which the contract reads as null: never invented.
 * - `mergeView`: an agent's snapshot with MindCluster's fault codes added to the matching device
 *   (by resource id, `Ascend910-<phy_id>` / `Ascend310P-<device_id>`) and its health the worse
 *   of the two, so neither source can hide a fault the other sees.
 * - `mergeNodeProblems`: any snapshot of the node with NodeD's node problem added (node-info.ts).
 */
import {
  snapshotSchema,
  SNAPSHOT_LIMITS,
  SNAPSHOT_SCHEMA,
  type NodeProblemReading,
  type Snapshot,
} from '../../contracts/index.js';
import {
  CRITICAL_RANK,
  RESOURCE_FAMILIES,
  levelRank,
  type MindClusterDevice,
  type MindClusterView,
} from './device-info.js';

/** The collector named in synthetic snapshots; their boot ids start with BOOT_PREFIX (for people: EngineHost tells them by their origin). */
export const MINDCLUSTER_COLLECTOR = 'mindcluster';
export const BOOT_PREFIX = 'mindcluster:';

export type HealthWord = 'OK' | 'Warning' | 'Critical';

export function healthOf(device: MindClusterDevice): HealthWord {
  if (device.lists.includes('unhealthy') || device.lists.includes('manually-separated')) return 'Critical';
  const worst = device.faults.reduce((rank, fault) => Math.max(rank, levelRank(fault.level)), 0);
  if (worst >= CRITICAL_RANK) return 'Critical';
  if (worst > 0 || device.lists.includes('network-unhealthy') || device.lists.includes('recovering'))
    return 'Warning';
  return 'OK';
}

/** Every fault code of the device's entries, sorted, at most the snapshot's limit. */
export function codesOf(device: MindClusterDevice): string[] {
  const codes = new Set<string>();
  for (const fault of device.faults) for (const code of fault.codes) codes.add(code);
  return [...codes].sort().slice(0, SNAPSHOT_LIMITS.errorCodes);
}

/** The synthetic snapshot of `view` (validated, defaults filled). */
export function snapshotOf(
  view: MindClusterView,
  stamp: { bootId: string; seq: number; now: number },
  nodeProblems: readonly NodeProblemReading[] = [],
): Snapshot {
  const family = RESOURCE_FAMILIES[view.resource];
  const name = `${view.resource} (MindCluster)`;
  const payload =
    family === '910B'
      ? {
          family,
          npus: view.devices.map((d) => ({
            npu: d.index,
            chip: 0,
            phy_id: d.index,
            name,
            health: healthOf(d),
            error_codes: codesOf(d),
          })),
        }
      : {
          family,
          cards: view.devices.map((d) => ({
            card: d.index,
            name,
            chips: [{ chip: 0, device_id: d.index, health: healthOf(d), error_codes: codesOf(d) }],
          })),
        };
  return snapshotSchema.parse({
    schema: SNAPSHOT_SCHEMA,
    node: view.node,
    boot_id: stamp.bootId,
    seq: stamp.seq,
    collected_at: new Date(stamp.now).toISOString(),
    collector: MINDCLUSTER_COLLECTOR,
    payload: nodeProblems.length > 0 ? { ...payload, node_problems: nodeProblems } : payload,
  });
}

const HEALTH_RANK: Readonly<Record<string, number>> = { critical: 3, alarm: 2, warning: 2 };
const rankOf = (word: string): number => HEALTH_RANK[word.toLowerCase()] ?? 0;

/** `snapshot` with `view`'s faults merged into the devices they name; the same object when none applies. */
export function mergeView(snapshot: Snapshot, view: MindClusterView | undefined): Snapshot {
  if (view === undefined || view.node !== snapshot.node) return snapshot;
  const byIndex = new Map(view.devices.map((d) => [d.index, d]));
  const merge = <T extends { health: string; error_codes: string[] }>(record: T, index: number): T => {
    const device = byIndex.get(index);
    if (device === undefined) return record;
    const health = healthOf(device);
    const codes = codesOf(device);
    const worse = rankOf(health) > rankOf(record.health);
    const added = codes.filter((code) => !record.error_codes.some((c) => c.toUpperCase() === code));
    if (!worse && added.length === 0) return record;
    return {
      ...record,
      health: worse ? health : record.health,
      error_codes: [...record.error_codes, ...added].slice(0, SNAPSHOT_LIMITS.errorCodes),
    };
  };
  const payload = snapshot.payload;
  const family = RESOURCE_FAMILIES[view.resource];
  if (payload.family === '910B' && family === '910B')
    return {
      ...snapshot,
      payload: { ...payload, npus: payload.npus.map((n) => merge(n, n.phy_id ?? n.npu)) },
    };
  if (payload.family === '310P' && family === '310P')
    return {
      ...snapshot,
      payload: {
        ...payload,
        cards: payload.cards.map((card) => ({
          ...card,
          chips: card.chips.map((c) => merge(c, c.device_id)),
        })),
      },
    };
  return snapshot;
}

/**
 * `snapshot` with `problems` added to its node problems (a reason it already carries keeps the
 * snapshot's message), within the contract's bound; the same object when none is new.
 */
export function mergeNodeProblems(snapshot: Snapshot, problems: readonly NodeProblemReading[]): Snapshot {
  const held = snapshot.payload.node_problems ?? [];
  const added = problems.filter((p) => !held.some((h) => h.reason === p.reason));
  if (added.length === 0) return snapshot;
  // Ours first when the bound cuts: an agent's own problems are at most the bound already.
  const merged = [...added, ...held].slice(0, SNAPSHOT_LIMITS.nodeProblems);
  return { ...snapshot, payload: { ...snapshot.payload, node_problems: merged } } as Snapshot;
}
