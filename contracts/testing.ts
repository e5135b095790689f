/**
 * Test builders of wire-form snapshots (what an agent sends, before defaults are filled in),
 * shared by the tests of the observation endpoint and the ingest function.
 */
import type { z } from 'zod';
import type { SnapshotInput, gpuSchema } from './snapshot.js';

/** What a GPU snapshot is made of; defaults give a healthy two-GPU node. */
export interface GpuSnapshotOptions {
  node?: string;
  seq?: number;
  bootId?: string;
  /** ISO time (default 2026-01-01T00:00:00Z plus `seq` seconds). */
  collectedAt?: string;
  /** XIDs reported by GPU 0 (79, fallen off the bus, fails it at once). */
  xids?: number[];
}

/** A valid hdc.health/v1 snapshot of an NVIDIA node, as an agent would send it. */
export function gpuSnapshot(options: GpuSnapshotOptions = {}): SnapshotInput {
  const seq = options.seq ?? 1;
  const collectedAt = options.collectedAt ?? new Date(Date.UTC(2026, 0, 1) + seq * 1000).toISOString();
  const gpu = (index: number, xids: number[]): z.input<typeof gpuSchema> => ({
    index,
    uuid: `GPU-0000-${index}`,
    bus_id: `0000:1${index}:00.0`,
    name: 'NVIDIA H100 80GB HBM3',
    temperature_gpu: 40,
    power_draw_w: 300,
    ecc_corrected_volatile: 0,
    ecc_uncorrected_volatile: 0,
    pcie_link_gen: 5,
    pcie_link_width: 16,
    xid_events: xids.map((xid) => ({ xid, at: collectedAt })),
  });
  return {
    schema: 'hdc.health/v1',
    node: options.node ?? 'gpu-node-1',
    boot_id: options.bootId ?? 'boot-1',
    seq,
    collected_at: collectedAt,
    collector: 'nvidia-smi',
    payload: { family: 'nvidia', gpus: [gpu(0, options.xids ?? []), gpu(1, [])] },
  };
}
