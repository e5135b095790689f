/**
 * The simulated node's fault board: the faults injected through the agent's fault API, in
 * the terms a person uses (`hot`, `offline`, `tool-hang`…), turned into the simulator's
 * timeline faults (core/sim) for the readings, and into agent behaviour for the rest (the
 * tool hangs or prints garbage, the agent falls silent, the kernel logs an XID, a node check
 * finds a node problem, the kubelet says a pod holds a device).
 */
import { z } from 'zod';
import {
  DNS_LABEL_PATTERN,
  DNS_SUBDOMAIN_PATTERN,
  AGENT_NODE_PROBLEM_REASONS,
  type AnyFamilyPayload,
  type DeviceHolderReading,
} from '../../contracts/index.js';
import { normalise } from '../../core/normalise.js';
import type { Fault, SimNode } from '../../core/sim/index.js';
import { FAMILIES } from '../../families/index.js';
import type { NodeCheck, NodeProblem } from '../node-checks/index.js';

/** The fault-injection API's path (api.ts; here so naming it does not load express). */
export const SIM_FAULTS_PATH = '/v1/sim/faults';

/** Faults the API takes. */
export const SIM_FAULT_KINDS = [
  'hot',
  'ecc-storm',
  'uncorrectable',
  'link-down',
  'offline',
  'vanish',
  'xid',
  'tool-hang',
  'garbage',
  'silence',
  'node-problem',
  'holder',
] as const;
/** One of SIM_FAULT_KINDS. */
export type SimFaultKind = (typeof SIM_FAULT_KINDS)[number];

/** Kinds that act on one device (the others act on the tool or the agent). */
const DEVICE_KINDS: ReadonlySet<SimFaultKind> = new Set([
  'hot',
  'ecc-storm',
  'uncorrectable',
  'link-down',
  'offline',
  'vanish',
  'xid',
  'holder',
]);

/** A fault request (POST /v1/sim/faults). */
export const simFaultRequestSchema = z.strictObject({
  kind: z.enum(SIM_FAULT_KINDS),
  /** The device's display id (`npu3`, `npu0-1`, `gpu2`); required for device faults. */
  device: z.string().min(1).max(32).optional(),
  /** How long it lasts; default until deleted (one-shot kinds: `uncorrectable`, `xid`). */
  seconds: z.number().positive().max(86400).optional(),
  /** `hot`: the temperature it climbs to (default 90 °C). */
  celsius: z.number().min(-50).max(200).optional(),
  /** `xid`: the XID number (default 79, fallen off the bus). */
  xid: z.number().int().min(0).max(1000).optional(),
  /** `uncorrectable`: how many errors (default 1). */
  count: z.number().int().positive().max(1_000_000).optional(),
  /** `node-problem`: which (`nic-link-down`, …); the agent reports it as its checks would. */
  reason: z.enum(AGENT_NODE_PROBLEM_REASONS).optional(),
  /** `holder`: the pod (`namespace/name`) the simulated kubelet says holds the device. */
  pod: z
    .string()
    .max(317)
    .refine((pod) => {
      const [namespace = '', name = '', ...rest] = pod.split('/');
      return (
        rest.length === 0 &&
        namespace.length <= 63 &&
        name.length <= 253 &&
        DNS_LABEL_PATTERN.test(namespace) &&
        DNS_SUBDOMAIN_PATTERN.test(name)
      );
    }, 'must be namespace/name of a Kubernetes pod')
    .optional(),
});
/** A fault request as validated. */
export type SimFaultRequest = z.infer<typeof simFaultRequestSchema>;

/** An injected fault. */
export interface SimFault extends SimFaultRequest {
  id: number;
  /** Epoch ms it was injected. */
  from: number;
  /** Epoch ms it ends; null while open. */
  to: number | null;
}

/** A fault the API refuses, with the field at fault. */
export class SimFaultError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/** The board. Time is passed in (epoch ms), so it is tested without a clock. */
export class FaultBoard {
  readonly #node: SimNode;
  readonly #start: number;
  readonly #faults = new Map<number, SimFault>();
  #nextId = 1;

  /** `start` is second 0 of the simulator's timeline (epoch ms). */
  constructor(node: SimNode, start: number) {
    this.#node = node;
    this.#start = start;
  }

  /** Injects a fault; throws SimFaultError when it names no device of this node. */
  add(request: SimFaultRequest, now: number): SimFault {
    if (DEVICE_KINDS.has(request.kind)) {
      if (request.device === undefined) throw new SimFaultError('device', `required for ${request.kind}`);
      const known = this.#node.devices.map((d) => d.id);
      if (!known.includes(request.device))
        throw new SimFaultError(
          'device',
          `${this.#node.name} has no ${request.device} (it has ${known.join(', ')})`,
        );
      if (request.kind === 'xid' && FAMILIES.get(this.#node.family)?.sim.faults.xid !== true)
        throw new SimFaultError('kind', `xid needs a GPU node; ${this.#node.name} is ${this.#node.kind}`);
    } else if (request.device !== undefined) {
      throw new SimFaultError('device', `${request.kind} acts on the whole node; give no device`);
    }
    if ((request.kind === 'node-problem') !== (request.reason !== undefined))
      throw new SimFaultError(
        'reason',
        request.kind === 'node-problem' ? 'required for node-problem' : `only node-problem takes a reason`,
      );
    if ((request.kind === 'holder') !== (request.pod !== undefined))
      throw new SimFaultError(
        'pod',
        request.kind === 'holder' ? 'required for holder' : 'only holder takes a pod',
      );
    const fault: SimFault = {
      ...request,
      id: this.#nextId++,
      from: now,
      to: request.seconds === undefined ? null : now + request.seconds * 1000,
    };
    this.#faults.set(fault.id, fault);
    return fault;
  }

  /** Ends one fault (it stays listed, with its end); false when there is no such open fault. */
  end(id: number, now: number): boolean {
    const fault = this.#faults.get(id);
    if (!fault || (fault.to !== null && fault.to <= now)) return false;
    fault.to = now;
    return true;
  }

  /** Ends every open fault; returns how many. */
  endAll(now: number): number {
    let ended = 0;
    for (const fault of this.#faults.values()) if (this.end(fault.id, now)) ended++;
    return ended;
  }

  /** Every fault injected, oldest first. */
  list(): SimFault[] {
    return [...this.#faults.values()];
  }

  /** True while a fault of `kind` is in effect at `now`. */
  active(kind: SimFaultKind, now: number): boolean {
    for (const fault of this.#faults.values()) if (fault.kind === kind && inEffect(fault, now)) return true;
    return false;
  }

  /** The node problems injected and in effect at `now`, as a node check reports them. */
  nodeProblems(now: number): NodeProblem[] {
    const out: NodeProblem[] = [];
    for (const f of this.#faults.values())
      if (f.kind === 'node-problem' && f.reason !== undefined && inEffect(f, now))
        out.push({ reason: f.reason, message: `injected by the simulator (fault ${f.id})` });
    return out;
  }

  /**
   * The pods the simulated kubelet says hold each device (display id → `namespace/name`, sorted)
   * while `holder` faults are in effect at `now`; undefined when none is (the holders unknown).
   */
  holders(now: number): ReadonlyMap<string, readonly string[]> | undefined {
    const out = new Map<string, Set<string>>();
    for (const f of this.#faults.values())
      if (f.kind === 'holder' && f.device !== undefined && f.pod !== undefined && inEffect(f, now)) {
        let pods = out.get(f.device);
        if (pods === undefined) out.set(f.device, (pods = new Set()));
        pods.add(f.pod);
      }
    return out.size === 0 ? undefined : new Map([...out].map(([device, pods]) => [device, [...pods].sort()]));
  }

  /** The simulator's timeline faults for the readings (seconds after `start`). */
  timeline(): Fault[] {
    const out: Fault[] = [];
    const second = (ms: number): number => Math.max(0, Math.floor((ms - this.#start) / 1000));
    for (const f of this.#faults.values()) {
      const window = {
        node: this.#node.name,
        from: second(f.from),
        ...(f.to === null ? {} : { to: Math.max(second(f.from) + 1, second(f.to)) }),
      };
      const device = f.device ?? '';
      switch (f.kind) {
        case 'hot':
          out.push({
            kind: 'heat',
            device,
            ...window,
            ...(f.celsius === undefined ? {} : { celsius: f.celsius }),
          });
          break;
        case 'ecc-storm':
          out.push({ kind: 'ecc-storm', device, ...window });
          break;
        case 'uncorrectable':
          // The counter steps up once and stays up, in one second of the timeline: the second
          // after the injection, since the live node may already have sampled the current one
          // (it resumes from the next), and a step in a sampled second would never be seen.
          out.push({
            kind: 'ecc-uncorrectable',
            device,
            node: window.node,
            from: window.from + 1,
            count: f.count ?? 1,
          });
          break;
        case 'link-down':
          out.push({ kind: 'link-down', device, ...window, power: 'kept' });
          break;
        case 'offline':
          out.push({ kind: 'link-down', device, ...window, power: 'lost' });
          break;
        case 'vanish':
          out.push({ kind: 'vanish', device, ...window, mode: 'omitted' });
          break;
        default:
          // xid, tool-hang, garbage, silence, node-problem, holder act on the agent, not on the readings.
          break;
      }
    }
    return out;
  }
}

function inEffect(fault: SimFault, now: number): boolean {
  return fault.from <= now && (fault.to === null || now < fault.to);
}

/** The simulated node's node check: the `node-problem` faults in effect, as a real check would report them. */
export function simNodeCheck(board: FaultBoard): NodeCheck {
  return { name: 'sim', intervalMs: 500, run: async (now) => board.nodeProblems(now) };
}

/**
 * The `device_holders` of `payload` (CONTRACT §1.9) from the board's `holder` faults in effect
 * at `now`: each display id mapped to its device's resource id through normalisation, as the
 * engine names it; undefined when no holder fault is in effect (the holders unknown).
 */
export function simDeviceHolders(
  board: FaultBoard,
  payload: AnyFamilyPayload,
  now: number,
): DeviceHolderReading[] | undefined {
  const held = board.holders(now);
  if (held === undefined) return undefined;
  const out: DeviceHolderReading[] = [];
  for (const device of normalise({ payload })) {
    const pods = held.get(device.id);
    if (pods === undefined) continue;
    out.push({
      resource_id: device.resource_id,
      pods: pods.map((pod) => {
        const [namespace = '', name = ''] = pod.split('/');
        return { namespace, name, container: 'main' };
      }),
    });
  }
  return out;
}
