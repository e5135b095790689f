/**
 * What the agent exports about each of its devices (issue 28): the readings of its last
 * snapshot, normalised as the engine normalises them, and the status and reasons the
 * controllers published for the node (the ingest function's last answer). Pure: the metrics
 * module reads this at scrape time.
 */
import {
  publishedNodeSchema,
  type DeviceObservation,
  type DeviceStatus,
  type Snapshot,
} from '../../contracts/index.js';
import { normalise } from '../../core/normalise.js';

/** One device's series labels: bounded by the node's devices. */
export interface DeviceLabels {
  node: string;
  /** Display id (`npu3`, `npu0-1`, `gpu6`). */
  device: string;
  /** State identity: the PCI bus id (with the chip on a 310P), or the GPU's uuid. */
  pci: string;
  model: string;
  family: string;
}

/** One device's readings and published status; null where unknown. */
export interface DeviceTelemetry {
  labels: DeviceLabels;
  temperatureC: number | null;
  powerW: number | null;
  memoryUsedBytes: number | null;
  memoryTotalBytes: number | null;
  eccCorrectable: number | null;
  eccUncorrectable: number | null;
  /** 1 up, 0 down, null when the tool did not say. */
  pcieLinkUp: number | null;
  /** The tool's health word, lower-cased (`ok|warning|alarm|critical|unknown`). */
  health: string;
  /** The published status; null while the agent has no fresh answer (it would be a guess). */
  status: DeviceStatus | null;
  /** Active reasons as published (CONTRACT §2.6 order); empty when healthy or not known. */
  reasons: readonly string[];
}

/** What the controllers last told the agent about its node. */
export interface PublishedView {
  /** The node's entry (null: every device healthy, the node is not listed). */
  entry: unknown;
  /** No answer yet, or none recently: the entry may be old. */
  stale: boolean;
}

const MIB = 1024 * 1024;

/** Memory in MB as the tools print it (npu-smi's MB are MiB), as bytes. */
function bytes(mb: number | null | undefined): number | null {
  return mb === null || mb === undefined ? null : mb * MIB;
}

/** The ECC errors that were corrected: all errors less the uncorrectable ones. */
function correctable(observation: DeviceObservation): number | null {
  const { ecc_errors: all, ecc_uncorrectable: uncorrectable } = observation;
  if (all === null) return null;
  return uncorrectable === null ? all : Math.max(0, all - uncorrectable);
}

/**
 * Every device of the last snapshot, plus any device the published entry lists that the
 * snapshot does not (a device gone from the bus stays visible, with no readings).
 */
export function deviceTelemetry(
  node: string,
  snapshot: Snapshot | null,
  published: PublishedView,
): DeviceTelemetry[] {
  // A listed device the snapshot lacks is of the node's family: the payload's.
  const nodeFamily = snapshot?.payload.family ?? 'unknown';
  const parsed = published.stale ? null : publishedNodeSchema.safeParse(published.entry ?? null);
  const entry = parsed?.success === true ? parsed.data : null;
  const listed = new Map((entry?.npus ?? []).map((d) => [d.key, d]));
  const statusKnown = !published.stale && (published.entry === null || entry !== null);
  const out: DeviceTelemetry[] = [];
  for (const observation of snapshot === null ? [] : normalise(snapshot)) {
    const shown = listed.get(observation.key);
    listed.delete(observation.key);
    out.push({
      labels: {
        node,
        device: observation.id,
        pci: observation.key,
        model: observation.model,
        family: observation.family,
      },
      temperatureC: observation.temperature_c,
      powerW: observation.power_w,
      memoryUsedBytes: bytes(observation.memory_used_mb),
      memoryTotalBytes: bytes(observation.memory_total_mb),
      eccCorrectable: correctable(observation),
      eccUncorrectable: observation.ecc_uncorrectable,
      pcieLinkUp:
        observation.pcie_link_status === null ? null : observation.pcie_link_status === 'up' ? 1 : 0,
      health: observation.health,
      status: statusKnown ? (shown?.status ?? 'healthy') : null,
      reasons: statusKnown ? (shown?.reasons ?? []) : [],
    });
  }
  for (const shown of listed.values()) {
    out.push({
      labels: { node, device: shown.id, pci: shown.key, model: shown.model, family: nodeFamily },
      temperatureC: null,
      powerW: null,
      memoryUsedBytes: null,
      memoryTotalBytes: null,
      eccCorrectable: null,
      eccUncorrectable: null,
      pcieLinkUp: null,
      health: 'unknown',
      status: shown.status,
      reasons: shown.reasons,
    });
  }
  return out;
}
