/**
 * Test helpers: terse builders of validated snapshots for engine, property and golden
 * tests. Pure; times are seconds after T0.
 */
import { type Snapshot, type SnapshotInput, snapshotSchema } from '../../contracts/index.js';

/** 2026-11-29T08:00:00Z, the epoch of every test trace. */
export const T0 = Date.parse('2026-11-29T08:00:00.000Z');

/** Epoch ms of `seconds` after T0. */
export function at(seconds: number): number {
  return T0 + Math.round(seconds * 1000);
}

/** ISO time of `seconds` after T0. */
export function isoAt(seconds: number): string {
  return new Date(at(seconds)).toISOString();
}

/** One 910B chip, as written on the wire. */
export interface NpuSpec {
  npu: number;
  chip?: number;
  temp?: number | null;
  power?: number | null;
  sbe?: number | null;
  dbe?: number | null;
  link?: 'up' | 'down' | null;
  health?: string;
  codes?: string[];
  present?: boolean;
  bus?: string | null;
}

/** One GPU, as written on the wire. */
export interface GpuSpec {
  index: number;
  temp?: number | null;
  power?: number | null;
  corrected?: number | null;
  uncorrected?: number | null;
  xids?: Array<{ xid: number; at: string | null }>;
  present?: boolean;
  /** Every metric null (fell off the bus). */
  lost?: boolean;
  /** Listed by the tool, every metric N/A: null metrics and `readable: false`. */
  unreadable?: boolean;
}

/** Envelope fields of a test snapshot. */
export interface EnvelopeSpec {
  node?: string;
  boot?: string;
  seq: number;
  /** collected_at, seconds after T0. */
  t: number;
  /** collected_at as written, instead of `t` (sub-millisecond times). */
  collectedAt?: string;
  cached?: boolean;
  /** The payload's inference canary: failed requests in a row (0: the last one passed). */
  canaryFailures?: number;
  /** The payload's node problems (CONTRACT §1.8): the reasons that hold, with messages. */
  nodeProblems?: Array<{ reason: string; message?: string }>;
  /** The payload's device holders (CONTRACT §1.9): resource id → pods `namespace/name` (container `main`). */
  holders?: Record<string, string[]>;
}

/** The wire form of one 910B chip with healthy defaults. */
export function npuInput(spec: NpuSpec): Record<string, unknown> {
  return {
    npu: spec.npu,
    chip: spec.chip ?? 0,
    name: '910B3',
    health: spec.health ?? 'OK',
    temp_c: spec.temp === undefined ? 50 : spec.temp,
    power_w: spec.power === undefined ? 200 : spec.power,
    hbm: {
      ecc: {
        single_bit: spec.sbe === undefined ? 0 : spec.sbe,
        double_bit: spec.dbe === undefined ? 0 : spec.dbe,
      },
    },
    pcie: {
      bus_id:
        spec.bus === undefined
          ? `0000:${(0xc1 + spec.npu).toString(16).toUpperCase()}:00.${spec.chip ?? 0}`
          : spec.bus,
      link: spec.link === undefined ? 'up' : spec.link,
    },
    error_codes: spec.codes ?? [],
    present: spec.present ?? true,
  };
}

/** The wire form of one GPU with healthy defaults. */
export function gpuInput(spec: GpuSpec): Record<string, unknown> {
  const lost = spec.lost === true || spec.unreadable === true;
  const value = <T>(v: T | undefined, fallback: T): T | null =>
    lost ? null : v === undefined ? fallback : v;
  return {
    index: spec.index,
    uuid: `GPU-0000-${spec.index}`,
    bus_id: `0000:${(0x10 + spec.index).toString(16)}:00.0`,
    name: 'NVIDIA H100 80GB HBM3',
    temperature_gpu: value(spec.temp, 40),
    power_draw_w: value(spec.power, 300),
    ecc_corrected_volatile: value(spec.corrected, 0),
    ecc_uncorrected_volatile: value(spec.uncorrected, 0),
    pcie_link_gen: value(undefined, 5),
    pcie_link_width: value(undefined, 16),
    xid_events: spec.xids ?? [],
    present: spec.present ?? true,
    ...(spec.unreadable === true ? { readable: false } : {}),
  };
}

function envelope(env: EnvelopeSpec, body: Record<string, unknown>): SnapshotInput {
  const withProblems = env.nodeProblems === undefined ? body : { ...body, node_problems: env.nodeProblems };
  const payload =
    env.holders === undefined ? withProblems : { ...withProblems, device_holders: holdersInput(env.holders) };
  return {
    schema: 'hdc.health/v1',
    node: env.node ?? 'node-a',
    boot_id: env.boot ?? 'boot-1',
    seq: env.seq,
    collected_at: env.collectedAt ?? isoAt(env.t),
    collector: 'sim',
    cached: env.cached ?? false,
    payload: (env.canaryFailures === undefined
      ? payload
      : {
          ...payload,
          canary: {
            ok: env.canaryFailures === 0,
            consecutive_failures: env.canaryFailures,
            at: env.collectedAt ?? isoAt(env.t),
          },
        }) as SnapshotInput['payload'],
  };
}

/** The wire form of `device_holders` for resource id → `namespace/name` pods. */
export function holdersInput(holders: Record<string, string[]>): Array<Record<string, unknown>> {
  return Object.entries(holders).map(([resource_id, pods]) => ({
    resource_id,
    pods: pods.map((pod) => {
      const [namespace, name] = pod.split('/');
      return { namespace, name, container: 'main' };
    }),
  }));
}

/** A validated 910B snapshot. */
export function npuSnapshot(env: EnvelopeSpec, npus: NpuSpec[]): Snapshot {
  return snapshotSchema.parse(envelope(env, { family: '910B', npus: npus.map(npuInput) }));
}

/** A validated nvidia snapshot. */
export function gpuSnapshot(env: EnvelopeSpec, gpus: GpuSpec[]): Snapshot {
  return snapshotSchema.parse(envelope(env, { family: 'nvidia', gpus: gpus.map(gpuInput) }));
}

/** The wire (JSON) form of a snapshot, as a replay file line. */
export function line(snapshot: Snapshot): string {
  return JSON.stringify(snapshot);
}
