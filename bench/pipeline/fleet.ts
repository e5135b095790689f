/**
 * The pipeline benchmark's synthetic fleet: N simulated agents, each posting its node's
 * 8-device 910B snapshot to the ingest function once a second under its own pod-bound token,
 * at its own phase within the second (real agents are not synchronised). It injects faults
 * (a PCIe link down on a random device, restored after `faultSeconds`) at random times and
 * adds glitch noise that must never fail a device: single-sample temperature spikes above
 * the high-temp threshold, correctable ECC bumps, and missed seconds (an agent that skips a
 * push). Per fault it records when it was injected, when the first snapshot carrying it was
 * sent (its collected_at) and when the function answered that snapshot.
 *
 * What a real agent adds before the send (sampling the tools, the kernel-log watcher) is not
 * simulated here: the probe agents (real agent processes) measure it on the same clock.
 */
import { Agent, request } from 'undici';
import type { Snapshot } from '../../contracts/index.js';
import { npuSnapshot } from '../../core/engine/testing.js';

/** One simulated agent's identity. */
export interface FleetMember {
  node: string;
  token: string;
}

/** One injected fault and what the fleet saw of it. */
export interface InjectedFault {
  node: string;
  device: string;
  /** Epoch ms. */
  injectedAt: number;
  restoreAt: number;
  /** collected_at (epoch ms) of the first snapshot carrying it. */
  sentAt?: number;
  /** When the function answered that snapshot. */
  answeredAt?: number;
  /** The function's answer for that snapshot was not 200. */
  answerStatus?: number;
}

/** The fleet's knobs. */
export interface FleetOptions {
  functionUrl: string;
  members: readonly FleetMember[];
  devicesPerNode?: number;
  /** A fault every this many ms (0: none). */
  faultIntervalMs: number;
  faultSeconds: number;
  /** Glitches per node-second (0..1). */
  glitchRate: number;
  /** Deterministic choices. */
  seed: number;
  /** HTTP connections to the function (the function sees one keep-alive connection per agent in production). */
  connections?: number;
}

/** Counters of what the fleet sent. */
export interface FleetCounters {
  posts: number;
  failedPosts: number;
  statuses: Record<string, number>;
  glitches: { spikes: number; ecc: number; skipped: number };
  /** Snapshots an agent dropped from its full queue (the function too slow for too long). */
  dropped: number;
}

/** The agent's sender defaults (agent/config.ts push.maxQueue; a batch's most snapshots). */
const MAX_QUEUE = 60;
const MAX_BATCH = 60;

/** Park–Miller: reproducible choices without Math.random. */
export function createRandom(seed: number): () => number {
  let state = seed % 2147483647 || 1;
  return () => {
    state = (state * 48271) % 2147483647;
    return state / 2147483647;
  };
}

interface Member {
  node: string;
  token: string;
  snapshot: Snapshot;
  phaseMs: number;
  timer?: NodeJS.Timeout;
  /** Devices whose temperature spikes in the next sample only. */
  spike: Set<number>;
  skipNext: boolean;
  silenced?: boolean;
  /** A request of this agent is in flight (the agent's sender sends one at a time). */
  sending: boolean;
  /** Snapshots (JSON) queued meanwhile, with the faults each carries first. */
  queue: { json: string; carried: InjectedFault[] }[];
}

type WireNpu = {
  temp_c: number | null;
  pcie: { link: string | null };
  hbm: { ecc: { single_bit: number | null } };
};

/** The running fleet. */
export class SyntheticFleet {
  /** Every fault injected, in injection order. */
  readonly faults: InjectedFault[] = [];
  readonly counters: FleetCounters = {
    posts: 0,
    failedPosts: 0,
    statuses: {},
    glitches: { spikes: 0, ecc: 0, skipped: 0 },
    dropped: 0,
  };
  readonly #members: Member[];
  readonly #active = new Map<string, InjectedFault>();
  readonly #dispatcher: Agent;
  readonly #random: () => number;
  readonly #devices: number;
  #faultTimer?: NodeJS.Timeout;
  #injecting = false;
  #stopped = false;
  #startedAt = 0;
  readonly #inFlight = new Set<Promise<void>>();

  constructor(readonly options: FleetOptions) {
    this.#random = createRandom(options.seed);
    this.#devices = options.devicesPerNode ?? 8;
    // One keep-alive connection per agent, as the function sees them in production.
    this.#dispatcher = new Agent({
      connections: options.connections ?? options.members.length,
      keepAliveTimeout: 30_000,
    });
    this.#members = options.members.map((m) => ({
      node: m.node,
      token: m.token,
      snapshot: npuSnapshot(
        { node: m.node, boot: 'bench', seq: 0, t: 0 },
        Array.from({ length: this.#devices }, (_, npu) => ({ npu })),
      ),
      phaseMs: Math.floor(this.#random() * 1000),
      spike: new Set(),
      skipNext: false,
      sending: false,
      queue: [],
    }));
  }

  /** Node names, in order. */
  nodes(): string[] {
    return this.#members.map((m) => m.node);
  }

  /** Device ids of every node (npu0…). */
  deviceIds(): string[] {
    return Array.from({ length: this.#devices }, (_, i) => `npu${i}`);
  }

  /** Starts every agent's 1 Hz loop (faults and glitches wait for `startInjecting`). */
  start(now = Date.now()): void {
    this.#startedAt = now;
    for (const member of this.#members) this.#schedule(member, 0);
  }

  /** Faults from now on, every faultIntervalMs. */
  startInjecting(): void {
    this.#injecting = true;
    if (this.options.faultIntervalMs <= 0) return;
    const next = (): void => {
      if (this.#stopped || !this.#injecting) return;
      this.#injectRandomFault(Date.now());
      this.#faultTimer = setTimeout(next, this.options.faultIntervalMs);
    };
    this.#faultTimer = setTimeout(next, this.options.faultIntervalMs * this.#random());
  }

  /** No new faults or glitches; the ones in effect run their course. */
  stopInjecting(): void {
    this.#injecting = false;
    clearTimeout(this.#faultTimer);
  }

  /** Every fault ever injected on the device. */
  faultsOn(node: string, device: string): InjectedFault[] {
    return this.faults.filter((f) => f.node === node && f.device === device);
  }

  /** The node's agent goes silent (it dies with its node): no more pushes. */
  silence(node: string): void {
    const member = this.#members.find((m) => m.node === node);
    if (!member) throw new Error(`silence: no agent for node ${node}`);
    member.silenced = true;
    clearTimeout(member.timer);
  }

  /**
   * Every node's device health now (a fault counts from the moment it is injected, before
   * the agent's next sample: a head start for a baseline that scrapes this).
   */
  health(): { node: string; devices: { id: string; healthy: boolean }[] }[] {
    return this.#members.map((m) => ({
      node: m.node,
      devices: Array.from({ length: this.#devices }, (_, i) => ({
        id: String(i),
        healthy: !this.#active.has(`${m.node}/npu${i}`),
      })),
    }));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.stopInjecting();
    for (const m of this.#members) clearTimeout(m.timer);
    await Promise.allSettled([...this.#inFlight]);
    await this.#dispatcher.close();
  }

  #schedule(member: Member, second: number): void {
    if (this.#stopped || member.silenced) return;
    const due = this.#startedAt + member.phaseMs + second * 1000;
    member.timer = setTimeout(
      () => {
        this.#tick(member, Date.now());
        this.#schedule(member, second + 1);
      },
      Math.max(0, due - Date.now()),
    );
  }

  #npus(member: Member): WireNpu[] {
    return (member.snapshot.payload as unknown as { npus: WireNpu[] }).npus;
  }

  #tick(member: Member, now: number): void {
    for (const [key, fault] of this.#active) {
      if (now >= fault.restoreAt && fault.node === member.node) {
        this.#npus(member)[Number(fault.device.slice(3))]!.pcie.link = 'up';
        this.#active.delete(key);
      }
    }
    if (member.skipNext) {
      member.skipNext = false;
      return;
    }
    const npus = this.#npus(member);
    if (this.#injecting) this.#glitch(member, npus);
    for (let i = 0; i < npus.length; i++) npus[i]!.temp_c = member.spike.has(i) ? 96 : 50;
    member.spike.clear();
    const snapshot = member.snapshot as { seq: number; collected_at: string };
    snapshot.seq++;
    const collectedAt = new Date(now).toISOString();
    snapshot.collected_at = collectedAt;
    const carried: InjectedFault[] = [];
    for (const fault of this.#active.values())
      if (fault.node === member.node && fault.sentAt === undefined) {
        fault.sentAt = now;
        carried.push(fault);
      }
    member.queue.push({ json: JSON.stringify(member.snapshot), carried });
    // The agent's sender: the oldest snapshot goes when its queue is full (its XIDs would move
    // on; this fleet has none).
    if (member.queue.length > MAX_QUEUE) {
      member.queue.shift();
      this.counters.dropped++;
    }
    if (!member.sending) this.#sendQueued(member);
  }

  /** Sends what the agent has queued: one snapshot bare, more as one batch (agent/push/sender.ts). */
  #sendQueued(member: Member): void {
    const batch = member.queue.splice(0, MAX_BATCH);
    if (batch.length === 0) return;
    member.sending = true;
    const body =
      batch.length === 1 ? batch[0]!.json : `{"snapshots":[${batch.map((b) => b.json).join(',')}]}`;
    const post = this.#post(
      member,
      body,
      batch.flatMap((b) => b.carried),
    ).finally(() => {
      member.sending = false;
      this.#inFlight.delete(post);
      if (!this.#stopped) this.#sendQueued(member);
    });
    this.#inFlight.add(post);
  }

  /** Noise the smoothing must absorb: one-sample spikes, correctable ECC, a missed second. */
  #glitch(member: Member, npus: WireNpu[]): void {
    if (this.#random() >= this.options.glitchRate) return;
    const kind = this.#random();
    const device = Math.floor(this.#random() * npus.length);
    if (kind < 0.5) {
      member.spike.add(device);
      this.counters.glitches.spikes++;
    } else if (kind < 0.8) {
      const ecc = npus[device]!.hbm.ecc;
      ecc.single_bit = (ecc.single_bit ?? 0) + 1;
      this.counters.glitches.ecc++;
    } else {
      member.skipNext = true;
      this.counters.glitches.skipped++;
    }
  }

  #injectRandomFault(now: number): void {
    for (let attempt = 0; attempt < 10; attempt++) {
      const index = Math.floor(this.#random() * this.#members.length);
      const member = this.#members[index]!;
      const npu = Math.floor(this.#random() * this.#devices);
      const device = `npu${npu}`;
      const key = `${member.node}/${device}`;
      // One fault at a time per device, and none on a device still recovering from the last.
      const last = this.faultsOn(member.node, device).at(-1);
      if (this.#active.has(key) || (last && now < last.restoreAt + 10_000)) continue;
      this.#npus(member)[npu]!.pcie.link = 'down';
      const fault: InjectedFault = {
        node: member.node,
        device,
        injectedAt: now,
        restoreAt: now + this.options.faultSeconds * 1000,
      };
      this.#active.set(key, fault);
      this.faults.push(fault);
      return;
    }
  }

  async #post(member: Member, body: string, carried: InjectedFault[]): Promise<void> {
    this.counters.posts++;
    let status = 0;
    try {
      const response = await request(`${this.options.functionUrl}/v1/snapshots`, {
        method: 'POST',
        dispatcher: this.#dispatcher,
        headers: { authorization: `Bearer ${member.token}`, 'content-type': 'application/json' },
        body,
        headersTimeout: 10_000,
        bodyTimeout: 10_000,
      });
      status = response.statusCode;
      await response.body.dump();
    } catch {
      status = 0;
    }
    const answeredAt = Date.now();
    this.counters.statuses[status] = (this.counters.statuses[status] ?? 0) + 1;
    if (status !== 200) this.counters.failedPosts++;
    for (const fault of carried) {
      fault.answeredAt = answeredAt;
      fault.answerStatus = status;
    }
  }
}
