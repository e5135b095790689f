/**
 * The normalised device observation (CONTRACT §1, "Normalisation"): one accelerator of one
 * snapshot, whatever its family, with a stable identity and unified fields. The detection
 * engine builds these from each snapshot it observes (core/normalise.ts) and reads only these.
 *
 * `key` is the state identity (bus id, uuid); `id` is only for display, so a GPU dropping
 * off the bus cannot shift its neighbours' state.
 */
import { z } from 'zod';

/** One GPU XID event as the agent reported it; `at` (ISO) lets a rolling list be deduplicated. */
export const xidEventSchema = z.object({
  xid: z.number().int().nonnegative(),
  at: z.string().nullable(),
});

/** The accelerator kind, as published: NPUs (the Ascend families) or GPUs (NVIDIA). */
export const deviceKindSchema = z.enum(['npu', 'gpu']);

/** The PCIe link as normalised: `up`, `down`, or null when the tool did not say. */
export const linkStatusSchema = z.enum(['up', 'down']).nullable();

/** One device of one snapshot, unified across families (CONTRACT §1 table). */
export const deviceObservationSchema = z.object({
  /** Display id: `npu3`, `npu0-1` (A3 chip 1), `gpu6`. */
  id: z.string().min(1),
  /** State identity: bus id (910B), bus id + chip (310P), uuid (nvidia); else `id`. */
  key: z.string().min(1),
  /** The name the device plugin allocates to pods (`Ascend910-3`, `Ascend310P-1`, GPU uuid). */
  resource_id: z.string().min(1),
  /** The accelerator family whose payload listed it (`910B`, `310P`, `nvidia`): families/. */
  family: z.string().min(1),
  kind: deviceKindSchema,
  /** Model name as the tool printed it (`910B3`, `310P3`, `NVIDIA H100 80GB HBM3`). */
  model: z.string(),
  /** Lower-cased tool health (`ok|warning|alarm|critical|unknown`); always `unknown` on GPUs. */
  health: z.string(),
  temperature_c: z.number().nullable(),
  power_w: z.number().nullable(),
  /** Device memory (HBM on a 910B, DDR on a 310P chip) in use and in all, MB as the tools print them; null where the tool does not say (nvidia-smi's query today). */
  memory_used_mb: z.number().nullable(),
  memory_total_mb: z.number().nullable(),
  /** Cumulative ECC errors of every kind since driver load. */
  ecc_errors: z.number().nullable(),
  /** Cumulative uncorrectable (double-bit) ECC errors since driver load. */
  ecc_uncorrectable: z.number().nullable(),
  pcie_link_status: linkStatusSchema,
  /** Ascend fault codes (hex strings such as `80E01801`); empty on GPUs. */
  error_codes: z.array(z.string()),
  /** GPU XID events with their times; empty on NPUs. */
  xids: z.array(xidEventSchema),
  /** False when the agent knows the device is installed but the tool did not report it. */
  present: z.boolean(),
  /**
   * Failed inference-canary requests in a row on the device's node, from the snapshot's
   * `canary` (every device of the node carries the node's count); absent when no canary runs.
   */
  inference_canary_failures: z.number().int().nonnegative().optional(),
});

/** A normalised device observation. */
export type DeviceObservation = z.infer<typeof deviceObservationSchema>;
/** One XID event. */
export type XidEvent = z.infer<typeof xidEventSchema>;
/** `npu` or `gpu`. */
export type DeviceKind = z.infer<typeof deviceKindSchema>;
