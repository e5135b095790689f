/**
 * Reasons (CONTRACT §3.3, §3.7, §3.8): a reason table (reason-table.ts) and a rules value
 * compiled into bit positions and the checks of the per-sample path.
 *
 * A device's active reasons are one 32-bit mask whose bit order *is* the table's order, the
 * publication order, so the published `reason` is the lowest set bit and `reasons` is the
 * set bits in order, with no sorting and no per-sample allocation. A family (`xid-<n>`)
 * takes one bit per member the rules give it, in its place. Node reasons (the overlays) are
 * bits of the node's own mask, in their order (overlays.ts).
 */
import { REASON_BITS, severityOf, type Rules } from '../../contracts/index.js';
import type { DeviceStatus } from './api.js';
import { ENGINE_NODE_REASONS, type NodeReasons } from './overlays.js';
import {
  REASON_TABLE,
  type CheckContext,
  type NodeCheck,
  type ReasonEntry,
  type SampleCheck,
} from './reason-table.js';

/** The compiled reason registry of one rules value. */
export interface ReasonTable {
  /** Published name of each bit (`fault-code` appears twice: critical and warning). */
  readonly names: readonly string[];
  /** Stable internal id of each bit (`fault-code:critical`), used to remap on a rules reload. */
  readonly ids: readonly string[];
  /** The rule behind each bit, with the thresholds of the rules (`npu-fault explain`). */
  readonly rules: readonly string[];
  /** Bits of critical reasons. */
  readonly critical: number;
  /** Bits of latched reasons. */
  readonly latched: number;
  /** Bits of event reasons (active for a window after the event): ECC increases and XIDs. */
  readonly events: number;
  /** Warning bits that hold a device degraded but never fail it on the 180 s clock (the canary, by default). */
  readonly degradeOnly: number;
  /** The checks of one sample, in table order, as one function (`composeChecks`). */
  readonly check: SampleCheck;
  /** The node reasons: names, `agent` values and rules of the node mask's bits, and their checks. */
  readonly nodes: CompiledNodeReasons;
  /** The bit of a reason id or family member (`xid-79`); 0 when the rules leave it out. */
  bit(id: string): number;
}

/** Node reasons with the rules in force. */
export interface CompiledNodeReasons extends NodeReasons {
  /** The rule behind each bit (an overlay's timer condition in `npu-fault explain`). */
  readonly rules: readonly string[];
  /** The checks run on each fresh snapshot, and the bits they own. */
  readonly checks: readonly { readonly bit: number; readonly check: NodeCheck }[];
  readonly checked: number;
  /** The Node conditions that raise a bit (rules `node_conditions`), and the bits they own. */
  readonly conditions: readonly NodeConditionBit[];
  readonly conditioned: number;
}

/** A bit raised while the Node's condition `type` has `status`. */
export interface NodeConditionBit {
  readonly bit: number;
  readonly type: string;
  readonly status: string;
}

/**
 * Builds the registry of `table` (the product's by default) under `rules`. Throws when the
 * table is inconsistent (a `by` naming no check, an engine-raised node reason out of its
 * place) or needs more than 32 bits, which the rules schema's limits rule out for the
 * product's table.
 */
export function compileReasons(rules: Rules, table: readonly ReasonEntry[] = REASON_TABLE): ReasonTable {
  const ids: string[] = [];
  const names: string[] = [];
  const explained: string[] = [];
  let critical = 0;
  let events = 0;
  let degradeOnly = 0;
  for (const entry of table) {
    if (entry.scope !== 'device') continue;
    const isCritical = severityOf(entry, rules) === 'critical';
    const isEvent = entry.kind === 'event';
    const degrades = !(entry.failsAfterDegraded?.(rules) ?? true);
    const members = entry.family === undefined ? [entry.name] : entry.family.members(rules);
    for (const name of members) {
      const bit = 1 << ids.length;
      ids.push(entry.family === undefined ? entry.id : name);
      names.push(name);
      explained.push(entry.explain(rules, name));
      if (isCritical) critical |= bit;
      if (isEvent) events |= bit;
      if (degrades) degradeOnly |= bit;
    }
  }
  if (ids.length > REASON_BITS)
    throw new RangeError(`too many reasons (${ids.length}); at most ${REASON_BITS}`);

  let latched = 0;
  for (const name of rules.latched) {
    ids.forEach((id, i) => {
      if (names[i] === name || id === name) latched |= 1 << i;
    });
  }
  const bit = (id: string): number => {
    const i = ids.indexOf(id);
    return i < 0 ? 0 : 1 << i;
  };
  return {
    names,
    ids,
    rules: explained,
    critical,
    latched,
    events,
    degradeOnly,
    check: composeChecks(sampleChecks(table, { rules, bit })),
    nodes: compileNodeReasons(table, rules),
    bit,
  };
}

function sampleChecks(table: readonly ReasonEntry[], ctx: CheckContext): SampleCheck[] {
  const checks: SampleCheck[] = [];
  for (const entry of table) {
    if (entry.scope !== 'device') continue;
    if ('check' in entry.raise) {
      checks.push(entry.raise.check(ctx));
      continue;
    }
    const by = entry.raise.by;
    const owner = table.find((e) => e.id === by);
    if (owner?.scope !== 'device' || !('check' in owner.raise))
      throw new Error(`reason ${entry.id} is raised by '${by}', which is no reason with a check of its own`);
  }
  return checks;
}

const none: SampleCheck = () => 0;

/**
 * One function running `checks` in order, each through a call site of its own: a site that
 * always calls the same check stays monomorphic and V8 inlines it, where a loop over the
 * checks is one megamorphic site (some 6 ns a call, which doubled `evaluateSample`: decision
 * 0030). Past 16 checks, the rest are composed the same way behind the 16th call site.
 */
export function composeChecks(checks: readonly SampleCheck[]): SampleCheck {
  const [c0 = none, c1 = none, c2 = none, c3 = none, c4 = none, c5 = none, c6 = none, c7 = none] = checks;
  const [c8 = none, c9 = none, c10 = none, c11 = none, c12 = none, c13 = none, c14 = none] = checks.slice(8);
  const c15 = checks.length > 16 ? composeChecks(checks.slice(15)) : (checks[15] ?? none);
  return (d, o) =>
    c0(d, o) |
    c1(d, o) |
    c2(d, o) |
    c3(d, o) |
    c4(d, o) |
    c5(d, o) |
    c6(d, o) |
    c7(d, o) |
    c8(d, o) |
    c9(d, o) |
    c10(d, o) |
    c11(d, o) |
    c12(d, o) |
    c13(d, o) |
    c14(d, o) |
    c15(d, o);
}

function compileNodeReasons(table: readonly ReasonEntry[], rules: Rules): CompiledNodeReasons {
  const names: string[] = [];
  const agents: NodeReasons['agents'][number][] = [];
  const explained: string[] = [];
  const checks: { bit: number; check: NodeCheck }[] = [];
  const conditions: NodeConditionBit[] = [];
  let checked = 0;
  let conditioned = 0;
  let overlay = 0;
  for (const entry of table) {
    if (entry.scope !== 'node') continue;
    if (entry.family !== undefined) {
      // Generated by the rules (`node_conditions`): a bit per member, raised by its condition.
      if (!('by' in entry.raise) || entry.raise.by !== 'conditions')
        throw new Error(`node reason ${entry.id} is a family, raised only by the Node's conditions`);
      for (const name of entry.family.members(rules)) {
        const bit = 1 << names.length;
        names.push(name);
        agents.push(entry.agent ?? null);
        explained.push(entry.explain(rules, name));
        if ((entry.severity?.(rules, name) ?? 'critical') === 'critical') overlay |= bit;
        const rule = rules.node_conditions.find((c) => c.reason === name);
        if (rule !== undefined) conditions.push({ bit, type: rule.type, status: rule.status });
        conditioned |= bit;
      }
      continue;
    }
    const bit = 1 << names.length;
    names.push(entry.name);
    agents.push(entry.agent ?? null);
    explained.push(entry.explain(rules, entry.name));
    if ((entry.severity?.(rules, entry.name) ?? 'critical') === 'critical') overlay |= bit;
    if ('check' in entry.raise) {
      checks.push({ bit, check: entry.raise.check(rules) });
      checked |= bit;
    } else if (entry.raise.by === 'conditions') {
      throw new Error(`node reason ${entry.id} is raised by the Node's conditions but is no family`);
    } else if (ENGINE_NODE_REASONS[entry.id] !== bit) {
      // The engine raises these by their bit (overlays.ts): a table moving one would mislabel it.
      throw new Error(
        `node reason ${entry.id} is raised by the engine, which knows no such reason at bit ${bit}`,
      );
    }
  }
  for (const id of Object.keys(ENGINE_NODE_REASONS))
    if (!table.some((e) => e.id === id))
      throw new Error(`the table leaves out node reason ${id}, which the engine raises`);
  if (names.length > REASON_BITS) throw new RangeError(`too many node reasons (${names.length})`);
  return { names, agents, overlay, rules: explained, checks, checked, conditions, conditioned };
}

/** Index of the lowest set bit (the first reason in publication order); -1 for an empty mask. */
export function firstBit(mask: number): number {
  return mask === 0 ? -1 : 31 - Math.clz32(mask & -mask);
}

/** The first active reason in publication order, or null. */
export function firstReason(table: ReasonTable, mask: number): string | null {
  const bit = firstBit(mask);
  return bit < 0 ? null : (table.names[bit] ?? null);
}

/** Every reason in the mask, in publication order, each name once. */
export function reasonNames(table: ReasonTable, mask: number): string[] {
  const out: string[] = [];
  for (let rest = mask; rest !== 0; rest &= rest - 1) {
    const name = table.names[firstBit(rest)];
    if (name !== undefined && !out.includes(name)) out.push(name);
  }
  return out;
}

/** Re-expresses a mask of `from`'s bits in `to`'s bits (a reload may move or drop bits). */
export function remapMask(mask: number, from: ReasonTable, to: ReasonTable): number {
  if (mask === 0 || from === to) return mask;
  let out = 0;
  for (let rest = mask; rest !== 0; rest &= rest - 1) {
    const id = from.ids[firstBit(rest)];
    const bit = id === undefined ? -1 : to.ids.indexOf(id);
    if (bit >= 0) out |= 1 << bit;
  }
  return out;
}

/**
 * The active reasons that on their own hold a device in `state`: any reason keeps a
 * device `unknown` (no clean sample yet) or `degraded` (every active reason of a degraded
 * device is a warning, which is what degrades); only a critical reason holds it `failed`
 * (a warning fails nothing by itself, only through 180 s of degradation). Healthy: none.
 */
export function holdingMask(table: ReasonTable, state: DeviceStatus, active: number): number {
  if (state === 'healthy') return 0;
  return state === 'failed' ? active & table.critical : active;
}

/**
 * The active reasons that have not changed the status (published as `signals`):
 * everything while healthy or unknown; nothing while degraded (its warnings are why);
 * the warnings of a device failed by a critical reason (`failedByCritical`: one is active
 * now, or one caused the failure). A device failed through 180 s of degradation was failed
 * by its warnings: no signals.
 */
export function signalMask(
  table: ReasonTable,
  state: DeviceStatus,
  active: number,
  failedByCritical = false,
): number {
  if (state === 'healthy' || state === 'unknown') return active;
  if (state === 'failed' && (failedByCritical || (active & table.critical) !== 0))
    return active & ~table.critical;
  return 0;
}
