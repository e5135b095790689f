/**
 * The Kubernetes Events baseline of the pipeline benchmark: what users get from their
 * alternative tools (device plugins, node-problem-detector), which report a fault as a Warning
 * Event on the Node through client-go's EventRecorder, with a consumer watching Events.
 *
 * The Events are written by client-go itself (bench/baselines/event-recorder, built by
 * hack/build-event-recorder.sh), so its EventCorrelator (spam filter, aggregation, count bumps)
 * and the apiserver's Event TTL act as they do for those tools; nothing here re-implements them.
 * The driver feeds faults at their times, a watch of core/v1 Events notes when each fault's
 * Event (its node, its device named in the message) first shows up, and the result says how
 * fast, and how many faults a consumer never saw or saw only folded into another Event.
 */
import * as k8s from '@kubernetes/client-node';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { createRng } from '../../core/sim/index.js';
import type { BaselineResult } from './result.js';
import { summarise } from './summary.js';

/** One fault: on `node`'s `device`, `at` ms after the run starts. */
export interface EventFault {
  node: string;
  device: string;
  reason: string;
  /** The Event's message; it must name the device (that is how the consumer matches it). */
  message: string;
  at: number;
}

/** client-go's EventCorrelator defaults (tools/record/events_cache.go), which the recorder keeps. */
export const CORRELATOR_DEFAULTS = {
  spamFilterBurst: 25,
  spamFilterRefillSeconds: 300,
  aggregateAtSimilarEvents: 10,
  aggregateWindowSeconds: 600,
} as const;

/** The message prefix of an Event the correlator made by combining similar ones. */
export const COMBINED_PREFIX = '(combined from similar events): ';

/** kube-apiserver's --event-ttl when not given. */
export const DEFAULT_EVENT_TTL_SECONDS = 3600;

// ---------------------------------------------------------------------------------------------
// Scenarios (pure)

/** A fault storm: background faults across the fleet, one node's burst, one flapping link. */
export interface StormOptions {
  seed: number | string;
  /** Each node but the burst node gets one fault at a random time in [0, spreadMs). */
  spreadMs: number;
  devicesPerNode?: number;
  /** `faults` faults on `node` within `windowMs` from `startMs`, round-robin over `devices` devices. */
  burst?: { node: string; faults: number; startMs: number; windowMs: number; devices?: number };
  /** The same fault (same message) `times` times, `intervalMs` apart: the Event's count goes up. */
  repeat?: { node: string; times: number; startMs: number; intervalMs: number };
}

const BACKGROUND_FAULTS = [
  { reason: 'NetworkLinkDown', text: 'RoCE port link down' },
  { reason: 'HBMUncorrectableECC', text: 'HBM multi-bit ECC error' },
  { reason: 'AICoreHang', text: 'AI core heartbeat lost' },
  { reason: 'Overheat', text: 'chip temperature above the shutdown threshold' },
] as const;

/**
 * The storm's faults, ordered by time. The burst is ECC errors repeating on every device, each
 * with a rising error count, so every message differs (as a real driver's do): past the 10th
 * the correlator combines them, past the 25th write its spam filter drops them.
 */
export function stormFaults(nodes: readonly string[], options: StormOptions): EventFault[] {
  const rng = createRng(options.seed);
  const devicesPerNode = options.devicesPerNode ?? 8;
  const faults: EventFault[] = [];
  for (const node of nodes) {
    if (node === options.burst?.node) continue;
    const kind = BACKGROUND_FAULTS[rng.int(0, BACKGROUND_FAULTS.length - 1)]!;
    const device = `npu${rng.int(0, devicesPerNode - 1)}`;
    faults.push({
      node,
      device,
      reason: kind.reason,
      message: `${device}: ${kind.text}`,
      at: Math.floor(rng.range(0, options.spreadMs)),
    });
  }
  const burst = options.burst;
  if (burst) {
    const devices = burst.devices ?? devicesPerNode;
    for (let i = 0; i < burst.faults; i++) {
      const device = `npu${i % devices}`;
      const occurrence = Math.floor(i / devices) + 1;
      faults.push({
        node: burst.node,
        device,
        reason: 'UncorrectableECC',
        message: `${device}: uncorrectable ECC error, volatile count ${occurrence}`,
        at: burst.startMs + Math.floor((i * burst.windowMs) / burst.faults),
      });
    }
  }
  const repeat = options.repeat;
  if (repeat)
    for (let i = 0; i < repeat.times; i++)
      faults.push({
        node: repeat.node,
        device: 'npu0',
        reason: 'NetworkLinkDown',
        message: 'npu0: RoCE port link down',
        at: repeat.startMs + i * repeat.intervalMs,
      });
  return faults.sort((a, b) => a.at - b.at);
}

/** An Event TTL and where the figure comes from. */
export interface EventTtl {
  seconds: number;
  source: string;
}

/**
 * The apiserver's Event TTL from its arguments (`--event-ttl=1h30m`, Go duration units h, m,
 * s, ms); the default when the flag is absent.
 */
export function eventTtlFromArgs(apiserverArgs: readonly string[]): EventTtl {
  const flag = apiserverArgs.find((a) => a.startsWith('--event-ttl='));
  if (!flag)
    return {
      seconds: DEFAULT_EVENT_TTL_SECONDS,
      source: 'kube-apiserver args: no --event-ttl, its default 1h',
    };
  const text = flag.slice('--event-ttl='.length);
  const units: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 0.001 };
  let seconds = 0;
  let rest = text;
  while (rest.length > 0) {
    const part = /^(\d+(?:\.\d+)?)(ms|h|m|s)/.exec(rest);
    if (!part) throw new Error(`--event-ttl: not a duration: ${text}`);
    seconds += Number(part[1]) * units[part[2]!]!;
    rest = rest.slice(part[0].length);
  }
  return { seconds, source: `kube-apiserver args: ${flag}` };
}

/**
 * The Event TTL of the running apiserver process `pid`, from its command line (Linux /proc);
 * when it cannot be read, the default, saying so.
 */
export async function apiserverEventTtl(pid: number | undefined): Promise<EventTtl> {
  const unread = {
    seconds: DEFAULT_EVENT_TTL_SECONDS,
    source: 'kube-apiserver default 1h (its args not read)',
  };
  if (pid === undefined) return unread;
  try {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8');
    return eventTtlFromArgs(cmdline.split('\0'));
  } catch {
    return unread;
  }
}

// ---------------------------------------------------------------------------------------------
// What the recorder and the consumer saw, and what it adds up to (pure)

/** One write the correlator let through (the recorder's `{"write":…}` line). */
export interface RecorderWrite {
  write: 'create' | 'patch' | 'update';
  node: string;
  name: string;
  reason: string;
  message: string;
  count: number;
  at: number;
  error?: string;
}

/** One Event as the consumer's watch delivered it. */
export interface ConsumerObservation {
  type: string;
  node: string;
  name: string;
  message: string;
  count: number;
  seenAt: number;
}

/** The device names a message mentions, among `devices`. */
function devicesNamed(message: string, devices: Iterable<string>): string[] {
  return [...devices].filter((d) => new RegExp(`(^|[^A-Za-z0-9])${d}([^A-Za-z0-9]|$)`).test(message));
}

/**
 * When each fault was first seen: every ADDED or MODIFIED Event, in the order the consumer
 * saw them, counts for the earliest not yet seen fault of its node and of a device its message
 * names that was emitted before it was seen. (Once a node's spam-filter bucket is empty nothing
 * more from it is written for minutes, so a later fault cannot be credited to an earlier one
 * within a run.) `emittedAt[i]` belongs to `faults[i]`; null: never emitted or never seen.
 */
export function matchObservations(
  faults: readonly EventFault[],
  emittedAt: readonly (number | undefined)[],
  observations: readonly ConsumerObservation[],
): { seenAt: (number | null)[]; combined: boolean[] } {
  const seenAt: (number | null)[] = faults.map(() => null);
  const combined = faults.map(() => false);
  const byNode = new Map<string, Set<string>>();
  for (const f of faults) byNode.set(f.node, (byNode.get(f.node) ?? new Set()).add(f.device));
  const ordered = [...observations].sort((a, b) => a.seenAt - b.seenAt);
  for (const o of ordered) {
    if (o.type !== 'ADDED' && o.type !== 'MODIFIED') continue;
    const named = new Set(devicesNamed(o.message, byNode.get(o.node) ?? []));
    const index = faults.findIndex(
      (f, i) =>
        f.node === o.node &&
        named.has(f.device) &&
        seenAt[i] === null &&
        emittedAt[i] !== undefined &&
        emittedAt[i] <= o.seenAt,
    );
    if (index < 0) continue;
    seenAt[index] = o.seenAt;
    combined[index] = o.message.startsWith(COMBINED_PREFIX);
  }
  return { seenAt, combined };
}

/** Everything one run gathered. */
export interface EventsRunRecord {
  faults: readonly EventFault[];
  emittedAt: readonly (number | undefined)[];
  writes: readonly RecorderWrite[];
  observations: readonly ConsumerObservation[];
  /** Events of the run's nodes a consumer listing right after the run gets. */
  listedAfter: readonly { node: string; message: string; count: number }[];
  clientGo: string;
  eventTtlSeconds: number;
  eventTtlSource: string;
}

/** The baseline's result from one run's record. */
export function eventsBaselineResult(run: EventsRunRecord): BaselineResult {
  const { seenAt, combined } = matchObservations(run.faults, run.emittedAt, run.observations);
  const samples: number[] = [];
  seenAt.forEach((at, i) => {
    const emitted = run.emittedAt[i];
    if (at !== null && emitted !== undefined) samples.push(at - emitted);
  });
  const ok = run.writes.filter((w) => !w.error);
  const created = ok.filter((w) => w.write === 'create').length;
  const bumped = ok.length - created;
  const failed = run.writes.length - ok.length;
  const emitted = run.emittedAt.filter((t) => t !== undefined).length;
  // Each Eventf the correlator let through makes one write (a failed one is counted per try).
  const suppressed = Math.max(0, emitted - run.writes.length);
  const combinedWrites = ok.filter((w) => w.message.startsWith(COMBINED_PREFIX));
  const seen = seenAt.filter((t) => t !== null).length;
  const maxCount = Math.max(0, ...run.observations.map((o) => o.count));
  const repeatedIdentical = ok.filter((w) => w.write !== 'create' && !w.message.startsWith(COMBINED_PREFIX));
  // A later list shows each Event once: its latest message, and how often it was counted.
  const nameableLater = run.listedAfter.reduce(
    (sum, e) => sum + (e.message.startsWith(COMBINED_PREFIX) ? 1 : e.count),
    0,
  );
  const ttl = run.eventTtlSeconds;
  return {
    name: 'kubernetes-events',
    notComparable:
      'delivery only (emit → a watcher sees the Event; the emitter detects nothing here): its findings are loss, aggregation and expiry under a storm',
    configuration: {
      recorder: `client-go ${run.clientGo} record.NewBroadcaster() + StartRecordingToSink, default CorrelatorOptions`,
      recorders: 'one per node (each node runs its own plugin: own correlator, own API client)',
      sourceComponent: 'npu-device-plugin',
      involvedObject: 'the Node (UID = node name, as the kubelet and node-problem-detector do)',
      spamFilter: `token bucket per source + object + type: burst ${CORRELATOR_DEFAULTS.spamFilterBurst}, refill 1 per ${CORRELATOR_DEFAULTS.spamFilterRefillSeconds} s`,
      aggregation: `from the ${CORRELATOR_DEFAULTS.aggregateAtSimilarEvents}th similar event (same source, object, type, reason; other message) within ${CORRELATOR_DEFAULTS.aggregateWindowSeconds} s`,
      clientRateLimit: 'client-go default: 5 QPS, burst 10',
      eventTtlSeconds: ttl,
      eventTtlSource: run.eventTtlSource,
      consumer:
        'watch of core/v1 Events, fieldSelector involvedObject.kind=Node; a fault counts as seen when an Event of its node naming its device is added or modified',
    },
    latency: summarise(samples),
    samples,
    injected: run.faults.length,
    seen,
    missed: run.faults.length - seen,
    findings: {
      eventfCalls: emitted,
      eventsCreated: created,
      countBumps: bumped,
      writeErrors: failed,
      suppressedBySpamFilter: suppressed,
      combinedWrites: combinedWrites.length,
      faultsSeenOnlyAsCombined: combined.filter(Boolean).length,
      identicalRepeatsCountedOnOneEvent: repeatedIdentical.length,
      maxEventCount: maxCount,
      eventsListedAfterRun: run.listedAfter.length,
      faultsNameableFromLaterList: nameableLater,
      writesVsFaults: `${created} Events created and ${bumped} patched for ${run.faults.length} faults`,
      spamFilterMeaning: `${suppressed} faults never reached the API: the spam filter allows ${CORRELATOR_DEFAULTS.spamFilterBurst} writes per node, then 1 per ${CORRELATOR_DEFAULTS.spamFilterRefillSeconds} s, so a storm on one node goes quiet after its first ${CORRELATOR_DEFAULTS.spamFilterBurst} writes`,
      aggregationMeaning: `${combinedWrites.length} writes went to "combined from similar events" Events; each write replaces the message, so a consumer that lists later sees only the latest fault of the combined ones (its count says how many)`,
      countMeaning: `an identical fault bumps count on the existing Event (highest count seen: ${maxCount}) instead of making a new one: the repeats are visible only as a number`,
      ttlMeaning: `the apiserver deletes an Event ${ttl} s after its last write (--event-ttl): a consumer that starts, or relists after a lost watch, more than ${ttl} s after a fault never sees it`,
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The run (processes, API)

/** What runEventsBaseline needs. */
export interface EventsBaselineOptions {
  /** The consumer watches Events with it. */
  admin: k8s.KubeConfig;
  /** The recorder writes Events with this kubeconfig file (needs create and patch on events in default). */
  kubeconfigForRecorder: string;
  /** The recorder binary (hack/event-recorder.ts buildEventRecorder). */
  recorderBinary: string;
  faults: readonly EventFault[];
  /** The apiserver's --event-ttl (apiserverEventTtl); default: the kube-apiserver default, stated. */
  eventTtl?: EventTtl;
  /** How long to wait after the recorder exits for the consumer to see its last writes. */
  settleTimeoutMs?: number;
  log?: (line: string) => void;
}

interface EventObject {
  metadata?: { name?: string; resourceVersion?: string };
  involvedObject?: { kind?: string; name?: string };
  message?: string;
  count?: number;
}

const FIELD_SELECTOR = 'involvedObject.kind=Node';

/** Watches Node Events from `resourceVersion`, resuming after a dropped connection. */
function watchNodeEvents(
  kc: k8s.KubeConfig,
  resourceVersion: string,
  onEvent: (type: string, event: EventObject) => void,
  onFatal: (error: Error) => void,
): { stop(): void } {
  const watch = new k8s.Watch(kc);
  let resumeFrom = resourceVersion;
  let stopped = false;
  let request: AbortController | undefined;
  const start = (): void => {
    watch
      .watch(
        '/api/v1/events',
        { fieldSelector: FIELD_SELECTOR, resourceVersion: resumeFrom },
        (type: string, event: EventObject) => {
          resumeFrom = event.metadata?.resourceVersion ?? resumeFrom;
          onEvent(type, event);
        },
        (error?: unknown) => {
          if (stopped) return;
          if (String(error).includes('410')) onFatal(new Error('Event watch expired (410 Gone)'));
          else setTimeout(start, 200).unref(); // a pause, so a failing connection cannot spin
        },
      )
      .then((controller) => {
        request = controller;
        if (stopped) controller.abort();
      })
      .catch((error: unknown) => onFatal(error instanceof Error ? error : new Error(String(error))));
  };
  start();
  return {
    stop() {
      stopped = true;
      request?.abort();
    },
  };
}

/**
 * Runs the baseline: starts the consumer's watch, then the recorder, feeds it `faults` at their
 * times, waits until the recorder has written everything its correlator let through and the
 * consumer has seen those writes, and returns the result.
 */
export async function runEventsBaseline(options: EventsBaselineOptions): Promise<BaselineResult> {
  return eventsBaselineResult(await recordEventsRun(options));
}

/** The run itself, returning the raw record (the test checks it write by write). */
export async function recordEventsRun(options: EventsBaselineOptions): Promise<EventsRunRecord> {
  // Wall-clock ms, the recorder's clock too (its emittedAt are unix ms on the same machine).
  const now = Date.now;
  const log = options.log ?? ((): void => undefined);
  const faults = [...options.faults].sort((a, b) => a.at - b.at);
  faults.forEach((f, i) => {
    if (devicesNamed(f.message, [f.device]).length === 0)
      throw new Error(`faults[${i}].message: must name its device ${f.device}, the consumer matches on it`);
  });
  const nodes = new Set(faults.map((f) => f.node));
  const core = options.admin.makeApiClient(k8s.CoreV1Api);

  const observations: ConsumerObservation[] = [];
  let watchError: Error | undefined;
  let onObservation = (): void => undefined;
  // Listing first gives the point to watch from: earlier Events (other runs) are not this run's.
  const before = await core.listEventForAllNamespaces({ fieldSelector: FIELD_SELECTOR, limit: 1 });
  const watch = watchNodeEvents(
    options.admin,
    before.metadata?.resourceVersion ?? '0',
    (type, event) => {
      const node = event.involvedObject?.name ?? '';
      if (!nodes.has(node)) return;
      observations.push({
        type,
        node,
        name: event.metadata?.name ?? '',
        message: event.message ?? '',
        count: event.count ?? 1,
        seenAt: now(),
      });
      onObservation();
    },
    (error) => {
      watchError = error;
      onObservation();
    },
  );

  const emittedAt: (number | undefined)[] = faults.map(() => undefined);
  const writes: RecorderWrite[] = [];
  let clientGo = 'unknown';
  const child = spawn(options.recorderBinary, [`--kubeconfig=${options.kubeconfigForRecorder}`], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const stderrLines: string[] = [];
  createInterface({ input: child.stderr }).on('line', (line) => {
    stderrLines.push(line);
    log(`[event-recorder] ${line}`);
  });
  createInterface({ input: child.stdout }).on('line', (line) => {
    const message = JSON.parse(line) as { i?: number; emittedAt?: number; start?: { clientGo?: string } };
    if (message.start) clientGo = message.start.clientGo ?? clientGo;
    else if (typeof message.i === 'number') emittedAt[message.i] = message.emittedAt;
    else writes.push(message as RecorderWrite);
  });
  const exited = new Promise<void>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve();
      else {
        const reason =
          stderrLines.filter((l) => l.startsWith('error:')).pop() ?? stderrLines.slice(-3).join(' | ');
        reject(new Error(`event-recorder exited with ${code}: ${reason}`));
      }
    });
  });
  // A recorder that died early closes its stdin: the exit code says why, not EPIPE.
  child.stdin.on('error', () => undefined);

  try {
    const start = now();
    for (const fault of faults) {
      const wait = start + fault.at - now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const { node, device, reason, message } = fault;
      child.stdin.write(`${JSON.stringify({ node, device, reason, message })}\n`);
    }
    child.stdin.end();
    await exited;

    // Every successful write is one watch event (ADDED or MODIFIED): wait for all of them.
    const expected = writes.filter((w) => !w.error).length;
    const settleTimeoutMs = options.settleTimeoutMs ?? 30_000;
    await new Promise<void>((resolve, reject) => {
      const check = (): void => {
        if (watchError) finish(watchError);
        else if (observations.length >= expected) finish();
      };
      const timer = setTimeout(
        () =>
          finish(
            new Error(
              `the Event watch saw ${observations.length} of ${expected} writes within ${settleTimeoutMs} ms`,
            ),
          ),
        settleTimeoutMs,
      );
      const finish = (error?: Error): void => {
        clearTimeout(timer);
        onObservation = (): void => undefined;
        if (error) reject(error);
        else resolve();
      };
      onObservation = check;
      check();
    });
  } finally {
    watch.stop();
    if (child.exitCode === null) child.kill();
  }

  const listed = await core.listEventForAllNamespaces({ fieldSelector: FIELD_SELECTOR });
  const listedAfter = listed.items
    .filter((e) => nodes.has(e.involvedObject.name ?? '') && e.source?.component === 'npu-device-plugin')
    .map((e) => ({ node: e.involvedObject.name ?? '', message: e.message ?? '', count: e.count ?? 1 }));
  const ttl = options.eventTtl ?? (await apiserverEventTtl(undefined));
  return {
    faults,
    emittedAt,
    writes,
    observations,
    listedAfter,
    clientGo,
    eventTtlSeconds: ttl.seconds,
    eventTtlSource: ttl.source,
  };
}
