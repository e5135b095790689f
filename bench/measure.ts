/**
 * The benchmark's measurements. Each one times only the operation it names, with
 * process.hrtime.bigint, after a warm-up pass, and reports the median of its runs (the
 * median shrugs off a GC pause or a noisy neighbour in one run; the mean does not).
 */
import { snapshotSchema } from '../contracts/index.js';
import type { DetectionEngine, PublisherInfo } from '../core/engine/index.js';
import { normalise } from '../core/normalise.js';
import { buildWorkload, type Workload } from './workload.js';

/** Makes a fresh engine with default rules. */
export type EngineFactory = () => DetectionEngine;

/** Forces a full garbage collection (node --expose-gc), or does nothing without one. */
export type Gc = () => void;

const PUBLISHER: PublisherInfo = { identity: 'bench', term: 1 };

/** The median of a non-empty list. */
export function median(xs: readonly number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

function elapsedMs(from: bigint): number {
  return Number(process.hrtime.bigint() - from) / 1e6;
}

/** State-machine throughput. */
export interface ThroughputResult {
  runsMs: number[];
  medianMs: number;
  samplesPerSecond: number;
  accepted: number;
  transitions: number;
}

/**
 * Times engine.observe over the whole workload on a fresh engine per run (a second pass on
 * the same engine would only measure the duplicate check), after one untimed warm-up run.
 */
export function measureThroughput(
  workload: Workload,
  createEngine: EngineFactory,
  runs: number,
  gc: Gc,
): ThroughputResult {
  const { snapshots, nows } = workload;
  let accepted = 0;
  let transitions = 0;
  const pass = (): number => {
    const engine = createEngine();
    gc();
    accepted = 0;
    transitions = 0;
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < snapshots.length; i++) {
      const result = engine.observe(snapshots[i]!, nows[i]!);
      if (result.accepted) accepted++;
      transitions += result.transitions.length;
    }
    return elapsedMs(t0);
  };
  pass();
  const runsMs = Array.from({ length: runs }, pass);
  const medianMs = median(runsMs);
  return {
    runsMs,
    medianMs,
    samplesPerSecond: workload.deviceSamples / (medianMs / 1000),
    accepted,
    transitions,
  };
}

/** Heap retained by an engine per tracked device. */
export interface MemoryResult {
  devices: number;
  heapBytes: number;
  bytesPerDevice: number;
}

/**
 * Heap growth from creating an engine and feeding it `samples` snapshots per node (enough
 * to fill the smoothing window), measured between two forced GCs while the snapshots stay
 * alive on both sides, so only what the engine keeps is counted.
 */
export function measureMemory(
  devices: number,
  createEngine: EngineFactory,
  gc: Gc,
  samples = 6,
): MemoryResult {
  const workload = buildWorkload({ devices, seconds: samples, faults: false });
  gc();
  gc();
  const before = process.memoryUsage().heapUsed;
  const engine = createEngine();
  for (let i = 0; i < workload.snapshots.length; i++)
    engine.observe(workload.snapshots[i]!, workload.nows[i]!);
  gc();
  gc();
  const heapBytes = process.memoryUsage().heapUsed - before;
  // Read both after the measurement so neither can be collected before it.
  const tracked = engine.deviceCount();
  if (workload.snapshots.length === 0) throw new Error('empty workload');
  return { devices: tracked, heapBytes, bytesPerDevice: heapBytes / tracked };
}

/** Costs on the ingest and publish paths around the state machine. */
export interface PathCosts {
  normaliseUsPerDevice: number;
  validateUsPerSnapshot: number;
  documentMs: number;
  documentBytes: number;
  documentNodes: number;
  stringifyMs: number;
}

function medianOf(runs: number, fn: () => void): number {
  fn();
  return median(
    Array.from({ length: runs }, () => {
      const t0 = process.hrtime.bigint();
      fn();
      return elapsedMs(t0);
    }),
  );
}

/**
 * Normalisation per device (all snapshots), validation per snapshot (JSON.parse + zod on
 * up to 2,000 snapshot texts, as the ingest function receives them), and rendering plus
 * serialising the published document for an engine that has seen the whole workload.
 */
export function measurePaths(workload: Workload, createEngine: EngineFactory, runs: number): PathCosts {
  const { snapshots, nows } = workload;
  let sink = 0;
  const normaliseMs = medianOf(runs, () => {
    for (const s of snapshots) sink += normalise(s).length;
  });
  const texts = snapshots.slice(0, 2000).map((s) => JSON.stringify(s));
  const validateMs = medianOf(runs, () => {
    for (const t of texts) sink += snapshotSchema.parse(JSON.parse(t)).seq;
  });
  const engine = createEngine();
  for (let i = 0; i < snapshots.length; i++) engine.observe(snapshots[i]!, nows[i]!);
  const now = nows[nows.length - 1] ?? 0;
  let doc: unknown = null;
  const documentMs = medianOf(runs * 4, () => {
    doc = engine.document(now, PUBLISHER);
  });
  let text = '';
  const stringifyMs = medianOf(runs * 4, () => {
    text = JSON.stringify(doc);
  });
  if (sink < 0) throw new Error('unreachable');
  const listed = (doc as { nodes?: object } | null)?.nodes ?? {};
  return {
    normaliseUsPerDevice: (normaliseMs * 1000) / workload.deviceSamples,
    validateUsPerSnapshot: texts.length ? (validateMs * 1000) / texts.length : 0,
    documentMs,
    documentBytes: Buffer.byteLength(text),
    documentNodes: Object.keys(listed).length,
    stringifyMs,
  };
}
