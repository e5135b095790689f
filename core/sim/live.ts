/**
 * One simulated node read live, second by second, with faults decided while it runs: what
 * the agent's `sim` collector samples. It takes exactly the step a trace takes
 * (generate.ts `stepNode`), so a live node read once in each second with the same faults
 * gives the payloads of `generateTrace` for that node, draw for draw.
 *
 * Time is an argument, as everywhere in core/: `sample(atMs, faults)` reads second
 * `floor((atMs - start) / 1000)` of the node's timeline, the timeline its faults' `from`
 * and `to` are on. Seconds are stepped in order, once each:
 *
 * - a later second steps every second in between first (at most `maxCatchUpSeconds` of
 *   them; before those the node simply did not live), so the counters and the random
 *   stream do not depend on how often the caller reads;
 * - the same second again (an out-of-cycle read, say just after a fault was injected)
 *   steps that second again from the state it began with, now with the faults given, so a
 *   counter never grows twice in one second;
 * - an earlier second (the caller's clock went back) reads the current second again.
 */
import type { Payload } from '../../contracts/index.js';
import { NpuFaultError } from '../errors.js';
import { resolveFault, type Fault, type ResolvedFault } from './faults.js';
import type { SimNode } from './fleet.js';
import { initialState, stepNode, type NodeState } from './generate.js';

/** Options of {@link createLiveNode}. */
export interface LiveNodeOptions {
  /** Seed of every random draw (with the node's name); default 1, as generateTrace's. */
  seed?: number | string;
  /** Epoch ms of second 0 of the node's timeline. */
  start: number;
  /** Most seconds stepped to catch up after a gap between reads; default 60. */
  maxCatchUpSeconds?: number;
}

/** A live simulated node. */
export interface LiveNode {
  readonly node: SimNode;
  /** Epoch ms of second 0. */
  readonly start: number;
  /** The second of the timeline `atMs` falls in (negative before the start). */
  secondAt(atMs: number): number;
  /**
   * What the node's tool reads at `atMs` with `faults` (every one for this node, on the
   * node's timeline; they may be new objects at every call). Null while the agent would
   * send nothing: a `silence` or `restart` fault, or a `cached` one before any good
   * reading. During a `cached` fault it is the last good reading again. Throws an
   * NpuFaultError naming a fault that does not fit the node.
   */
  sample(atMs: number, faults?: readonly Fault[]): Payload | null;
}

/** Creates a live node; nothing is stepped until the first `sample`. */
export function createLiveNode(node: SimNode, options: LiveNodeOptions): LiveNode {
  const { start } = options;
  const maxCatchUp = options.maxCatchUpSeconds ?? 60;
  if (!Number.isFinite(start)) throw new NpuFaultError('sim_config', `start: not a time: ${String(start)}`);
  if (!Number.isInteger(maxCatchUp) || maxCatchUp < 0)
    throw new NpuFaultError(
      'sim_config',
      `maxCatchUpSeconds: expected a whole number >= 0, got ${maxCatchUp}`,
    );
  let state = initialState(node, options.seed ?? 1);
  /** The state the current second began with, and that second (-1: none stepped yet). */
  let before: NodeState = state;
  let current = -1;
  let reading: Payload | null = null;
  // Resolving checks a fault against the node: once per fault object is enough.
  const resolved = new WeakMap<Fault, ResolvedFault>();
  const resolve = (faults: readonly Fault[]): ResolvedFault[] =>
    faults.map((fault) => {
      let r = resolved.get(fault);
      if (r === undefined) {
        r = resolveFault(fault, node);
        resolved.set(fault, r);
      }
      return r;
    });
  const step = (second: number, faults: readonly ResolvedFault[]): void => {
    before = cloneState(state);
    current = second;
    reading = stepNode(node, state, faults, second, start)?.payload ?? null;
  };
  const secondAt = (atMs: number): number => Math.floor((atMs - start) / 1000);

  return {
    node,
    start,
    secondAt,
    sample(atMs, faults = []) {
      const active = resolve(faults);
      const second = Math.max(secondAt(atMs), current, 0);
      if (second === current) {
        state = cloneState(before);
        step(second, active);
        return reading;
      }
      for (let s = Math.max(current + 1, second - maxCatchUp); s <= second; s++) step(s, active);
      return reading;
    },
  };
}

/** A copy of a node's state that steps on independently. */
function cloneState(st: NodeState): NodeState {
  return {
    ...st,
    rng: st.rng.clone(),
    corrected: [...st.corrected],
    uncorrected: [...st.uncorrected],
    quietFor: [...st.quietFor],
    xidAt: new Map(st.xidAt),
  };
}
