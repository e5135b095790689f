/**
 * The one interface every way of reading the node's accelerators implements (the tools here,
 * the simulator in agent/sim/), and what the tool collectors are built from.
 */
import type { AcceleratorFamily, Payload } from '../../contracts/index.js';
import type { Clock, Logger, Registry } from '../../platform/index.js';
import type { ExecTool, StreamTool } from '../probe/index.js';

/** A payload with the time it was read (epoch ms). */
export interface Reading {
  payload: Payload;
  collectedAt: number;
}

/** One way of reading the node's accelerators. */
export interface Collector {
  /** 'hdc' | 'npu-smi' | 'nvidia-smi' | 'sim' — becomes the snapshot's `collector`. */
  readonly name: string;
  /** The family its payloads are, when it knows before the first (a liveness sample's). */
  readonly family?: AcceleratorFamily;
  /**
   * One sample of every device the tool reports, as a validated payload (devices it names in an
   * error, e.g. nvidia-smi's "Unable to determine the device handle for GPU 0000:3B:00.0: GPU is
   * lost", come back with present:false). Throws on a tool failure or garbage output (an Error
   * whose message is one line). `signal` aborts when the probe's timeout passes: the collector
   * must then kill its children (with their process group) and reject promptly.
   */
  collect(signal: AbortSignal): Promise<Payload>;
  /**
   * As collect, with the time the payload was read, for a collector that reads ahead of the
   * call (the nvidia-smi loop); the probe uses it where present. Others read at the call.
   */
  read?(signal: AbortSignal): Promise<Reading>;
  /** Stops what the collector keeps running between calls (the nvidia-smi loop). */
  close?(): void;
}

/** What the tool collectors are built from. */
export interface CollectorDeps {
  exec: ExecTool;
  clock: Clock;
  /** Where a collector reports what does not fail a sample (a failed npu-smi `-t` call). */
  log?: Logger;
  /** Starts long-lived tools (the nvidia-smi loop); without it every sample is a one-shot run. */
  stream?: StreamTool;
  /** The sampling interval (ms): the nvidia-smi loop's period. */
  periodMs?: number;
  /** Where a collector's own metrics go (the nvidia-smi loop's). */
  registry?: Registry;
}
