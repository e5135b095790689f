/**
 * The pipeline benchmark's probe agents: real `npu-fault agent` processes with the sim
 * collector (a 910B and a GPU node, stack/pipeline-stack.ts starts them) whose faults go in through
 * their fault API, alternating: a PCIe link down on the 910B (seen at its next 1 Hz sample)
 * and a critical, non-latched XID on the GPU (a kernel-log event, sent at once), rotating over
 * the devices. Each agent's SSE stream (/v1/fault/stream) is followed as a pod on the node
 * would, so the paths that need a real agent (sampling, the event path, SSE) are measured on
 * the same clock as the synthetic fleet.
 */
import type { PublishedDevice } from '../../contracts/index.js';
import { simFaultSupport, type SimKind } from '../../core/sim/index.js';
import { followFaultStream, type SeenEntry, faultHeaders, type DemoAgent } from '../../stack/index.js';
import { createRandom } from './fleet.js';

/** The probe fleet (buildFleet's input). */
export const PROBE_FLEET: { kind: SimKind; count: number }[] = [
  { kind: '910B', count: 1 },
  { kind: 'nvidia', count: 1 },
];

/** XID 74 (NVLink error) is critical and not latched: the device recovers after it. */
const PROBE_XID = 74;
const LINK_DOWN_SECONDS = 8;

/** A probe fault and when each consumer saw it. */
export interface ProbeFault {
  node: string;
  device: string;
  kind: 'link-down' | 'xid';
  injectedAt: number;
  /** The published device's `since`: collected_at of the snapshot that failed it. */
  collectedAt?: number;
  /** The API watcher saw the device failed. */
  watchAt?: number;
  /** The node's SSE stream carried it failed. */
  sseAt?: number;
}

/** The running probes. */
export class ProbeAgents {
  readonly faults: ProbeFault[] = [];
  readonly #agents: readonly DemoAgent[];
  readonly #streams: { stop(): void }[] = [];
  readonly #random: () => number;
  readonly #log: (line: string) => void;
  #timer?: NodeJS.Timeout;
  #count = 0;

  constructor(agents: readonly DemoAgent[], options: { seed: number; log: (line: string) => void }) {
    this.#agents = agents;
    this.#random = createRandom(options.seed);
    this.#log = options.log;
  }

  /** Whether `node` is a probe's. */
  has(node: string): boolean {
    return this.#agents.some((a) => a.node.name === node);
  }

  /** The device ids of a probe's node. */
  deviceIds(node: string): string[] | undefined {
    return this.#agents.find((a) => a.node.name === node)?.node.devices.map((d) => d.id);
  }

  /** Follows every probe's SSE stream, noting when each fault shows there. */
  followStreams(): void {
    for (const agent of this.#agents)
      this.#streams.push(
        followFaultStream(agent.node.name, `${agent.url}/v1/fault/stream`, (seen) => this.#onSse(seen)),
      );
  }

  /**
   * Whether a probe fault explains `device` of `node` published failed at `at` (within
   * `windowMs` of its injection); notes the first such sighting.
   */
  explain(node: string, device: PublishedDevice, at: number, windowMs: number): boolean {
    const fault = this.faults.findLast((f) => f.node === node && f.device === device.id);
    if (!fault || fault.injectedAt > at || at > fault.injectedAt + windowMs) return false;
    if (fault.watchAt === undefined) {
      fault.watchAt = at;
      const since = device.since ? Date.parse(device.since) : Number.NaN;
      if (Number.isFinite(since)) fault.collectedAt = since;
    }
    return true;
  }

  /** True once every fault injected was seen by the watcher and on SSE. */
  allSeen(): boolean {
    return this.faults.every((f) => f.watchAt !== undefined && f.sseAt !== undefined);
  }

  /** A fault every ~intervalMs (±25 %) from now on. */
  startInjecting(intervalMs: number): void {
    if (intervalMs <= 0 || this.#agents.length === 0) return;
    const next = (): void => {
      void this.#inject().catch((error: unknown) =>
        this.#log(`[bench] probe fault failed: ${String(error)}`),
      );
      this.#timer = setTimeout(next, intervalMs * (0.75 + 0.5 * this.#random()));
    };
    this.#timer = setTimeout(next, intervalMs * this.#random());
  }

  stopInjecting(): void {
    clearTimeout(this.#timer);
  }

  stop(): void {
    this.stopInjecting();
    for (const s of this.#streams.splice(0)) s.stop();
  }

  async #inject(): Promise<void> {
    const agent = this.#agents[this.#count % this.#agents.length]!;
    const devices = agent.node.devices.map((d) => d.id);
    const device = devices[Math.floor(this.#count / this.#agents.length) % devices.length]!;
    // An XID where the family's devices report them (GPUs), else a link going down.
    const gpu = simFaultSupport(agent.node).xid === true;
    this.#count++;
    this.faults.push({
      node: agent.node.name,
      device,
      kind: gpu ? 'xid' : 'link-down',
      injectedAt: Date.now(),
    });
    const body = gpu
      ? { kind: 'xid', device, xid: PROBE_XID }
      : { kind: 'link-down', device, seconds: LINK_DOWN_SECONDS };
    const response = await fetch(`${agent.url}/v1/sim/faults`, {
      method: 'POST',
      headers: faultHeaders(agent),
      body: JSON.stringify(body),
    });
    if (response.status !== 201)
      this.#log(`[bench] probe fault refused: ${response.status} ${await response.text()}`);
  }

  #onSse(seen: SeenEntry): void {
    const devices = (seen.entry as { npus?: { id: string; status: string }[] } | null)?.npus ?? [];
    for (const d of devices) {
      if (d.status !== 'failed') continue;
      const fault = this.faults.findLast((f) => f.node === seen.node && f.device === d.id);
      if (fault && fault.injectedAt <= seen.at && fault.sseAt === undefined) fault.sseAt = seen.at;
    }
  }
}
