import { afterEach, describe, expect, it } from '@jest/globals';
import {
  BREAKER_CONFIGMAP,
  BREAKER_KEY,
  REMEDIATION_ANNOTATION,
  UNHEALTHY_TAINT_KEY,
  decodeBreaker,
  decodeNodeRecord,
  encodeNodeRecord,
  type NodeRecord,
  type PublishedNode,
} from '../../contracts/index.js';
import { FakeClock, Registry } from '../../platform/index.js';
import { createEventRecorder } from '../node-status/index.js';
import { FakeEventClient } from '../node-status/testing.js';
import { FakeConfigMapClient, memoryLog } from '../publisher/testing.js';
import type { CachedNode } from '../watch/index.js';
import { parseRemediationConfig, type RemediationConfigInput } from './config.js';
import { FakeDeviceTaintClient } from './device-taints/testing.js';
import { FakeRemediationNodeClient } from './fake-node-client.js';
import { createRemediationMetrics } from './metrics.js';
import { createRemediator, type DrainFunction, type DrainResult, type Remediator } from './remediator.js';

const T0 = Date.parse('2026-12-01T10:00:00.000Z');
const NS = 'ai-infra';

function failedEntry(node: string): PublishedNode {
  return {
    node,
    observed_at: new Date(T0).toISOString(),
    agent: 'ok',
    summary: { total: 8, healthy: 7, degraded: 0, failed: 1, unknown: 0 },
    npus: [
      {
        id: 'npu3',
        key: `${node}/npu3`,
        resource_id: 'Ascend910-3',
        kind: 'npu',
        model: '910B',
        status: 'failed',
        since: new Date(T0).toISOString(),
        reason: 'pcie-link-down',
        reasons: ['pcie-link-down'],
        signals: [],
        temperature_c: null,
        power_w: null,
        ecc_errors: null,
        pcie_link_status: 'down',
      },
    ],
  };
}

/** n's npu3 running hot: `high-temp` active, degraded. */
function hotEntry(node: string): PublishedNode {
  const entry = failedEntry(node);
  const [device] = entry.npus;
  if (!device) throw new Error('no device');
  entry.summary = { ...entry.summary, failed: 0, degraded: 1 };
  entry.npus = [
    {
      ...device,
      status: 'degraded',
      reason: 'high-temp',
      reasons: ['high-temp'],
      temperature_c: 92,
      pcie_link_status: 'up',
    },
  ];
  return entry;
}

interface Harness {
  clock: FakeClock;
  registry: Registry;
  nodes: FakeRemediationNodeClient;
  configMaps: FakeConfigMapClient;
  events: FakeEventClient;
  entries: Map<string, PublishedNode | null>;
  drains: {
    node: string;
    devices: readonly string[];
    resolve(result: DrainResult): void;
    signal: AbortSignal;
  }[];
  remediator: Remediator;
  leading: { value: boolean };
  /** Freezes the Node cache as it is now (true) or lets it follow the API again (false). */
  lag(on: boolean): void;
  /** Runs the first pass; later: `pass()`. */
  start(): Promise<void>;
  pass(): Promise<void>;
  flushEvents(): Promise<void>;
  stop(): Promise<void>;
}

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

function harness(
  settings: RemediationConfigInput | { current: RemediationConfigInput },
  nodeNames = ['n0', 'n1', 'n2', 'n3', 'n4', 'n5', 'n6', 'n7', 'n8', 'n9'],
  deviceTaints?: FakeDeviceTaintClient,
): Harness {
  const clock = new FakeClock(T0);
  const nodes = new FakeRemediationNodeClient();
  for (const name of nodeNames) nodes.put(name);
  const configMaps = new FakeConfigMapClient(clock);
  const eventClient = new FakeEventClient();
  const { log } = memoryLog();
  const registry = new Registry();
  const events = createEventRecorder(
    { client: eventClient, clock, log, registry },
    { component: 'test', instance: 'a' },
  );
  const entries = new Map<string, PublishedNode | null>();
  const drains: Harness['drains'] = [];
  const drain: DrainFunction = (node, devices, _config, signal) =>
    new Promise<DrainResult>((resolve) => {
      drains.push({ node, devices, resolve, signal });
      signal.addEventListener(
        'abort',
        () => resolve({ outcome: 'aborted', evicted: [], forced: [], blocking: [] }),
        { once: true },
      );
    });
  const leading = { value: true };
  const configFor = (): ReturnType<typeof parseRemediationConfig> =>
    parseRemediationConfig('current' in settings ? settings.current : settings);
  // The Node cache: current unless frozen (a watch lagging behind the writes).
  let frozen: CachedNode[] | undefined;
  const live = (): CachedNode[] =>
    [...nodes.nodes].map(([name, state]) => ({
      name,
      accelerator: true,
      ready: true,
      clear: undefined,
      latched: undefined,
      npuHealthy: undefined,
      unschedulable: state.unschedulable,
      remediation: state.annotations[REMEDIATION_ANNOTATION],
      maintenance: state.annotations['npu-fault.io/maintenance'],
      npuFaultLabels: [],
      resourceVersion: state.resourceVersion,
    }));
  const cached = (): CachedNode[] => frozen ?? live();
  const remediator = createRemediator(
    {
      nodes: cached,
      entry: (node) => entries.get(node) ?? null,
      config: configFor,
      nodeClient: nodes,
      configMaps,
      drain,
      events,
      clock,
      log,
      metrics: createRemediationMetrics(registry),
      leadership: () => (leading.value ? { leading: true, term: 3 } : { leading: false }),
      ...(deviceTaints ? { deviceTaints } : {}),
    },
    { identity: 'replica-a', term: 3, namespace: NS },
  );
  const abort = new AbortController();
  let running: Promise<void> | undefined;
  const h: Harness = {
    clock,
    registry,
    nodes,
    configMaps,
    events: eventClient,
    entries,
    drains,
    remediator,
    leading,
    lag(on) {
      frozen = on ? live() : undefined;
    },
    async start() {
      const next = remediator.nextPass();
      running = remediator.start(abort.signal);
      await next;
    },
    async pass() {
      const next = remediator.nextPass();
      remediator.wake();
      // A pass woken during the last one waits out the minimum gap between passes.
      await clock.advance(250);
      await next;
    },
    flushEvents: () => events.flush(),
    async stop() {
      abort.abort();
      await running;
    },
  };
  stops.push(h.stop);
  return h;
}

const record = (h: Harness, node: string): NodeRecord | undefined => {
  const text = h.nodes.nodes.get(node)?.annotations[REMEDIATION_ANNOTATION];
  return text === undefined ? undefined : decodeNodeRecord(text).value;
};
const reasons = (h: Harness): string[] =>
  [...h.events.events.values()].map((e) => `${e.involvedObject.name}:${e.reason}`).sort();

describe('remediator', () => {
  it('cordons and taints a failed node, records ownership, and says so in an Event', async () => {
    const h = harness({ mode: 'cordon' });
    h.entries.set('n3', failedEntry('n3'));
    await h.start();
    const node = h.nodes.nodes.get('n3');
    expect(node?.unschedulable).toBe(true);
    expect(node?.taints).toEqual([
      expect.objectContaining({ key: UNHEALTHY_TAINT_KEY, effect: 'NoSchedule' }),
    ]);
    expect(record(h, 'n3')).toMatchObject({
      phase: 'cordoned',
      by: 'replica-a',
      term: 3,
      devices: ['Ascend910-3'],
      reason: 'npu3: pcie-link-down',
    });
    await h.flushEvents();
    expect(reasons(h)).toEqual(['n3:NodeCordoned']);
    // Level-triggered: another pass changes nothing.
    const writes = h.nodes.writes.length;
    await h.pass();
    expect(h.nodes.writes).toHaveLength(writes);
  });

  it('keeps other taints, and leaves a node cordoned by someone else alone', async () => {
    const h = harness({ mode: 'cordon', breaker: { maxUnhealthyNodes: 5 } });
    h.nodes.put('n1', { taints: [{ key: 'dedicated', value: 'training', effect: 'NoSchedule' }] });
    h.nodes.put('n2', { unschedulable: true });
    h.entries.set('n1', failedEntry('n1'));
    await h.start();
    expect(h.nodes.nodes.get('n1')?.taints.map((t) => t.key)).toEqual(['dedicated', UNHEALTHY_TAINT_KEY]);
    h.entries.set('n2', failedEntry('n2'));
    await h.pass();
    expect(record(h, 'n2')).toBeUndefined();
    expect(h.nodes.writes.map((w) => w.node)).toEqual(['n1']);
  });

  it('opens the breaker when 3 of 10 fail at once: written first, no cordon, a Warning Event', async () => {
    const h = harness({ mode: 'cordon' });
    for (const node of ['n1', 'n4', 'n8']) h.entries.set(node, failedEntry(node));
    await h.start();
    const stored = await h.configMaps.get(
      { namespace: NS, name: BREAKER_CONFIGMAP },
      new AbortController().signal,
    );
    const breaker = decodeBreaker(stored?.data[BREAKER_KEY]).value;
    expect(breaker).toMatchObject({ state: 'open', unhealthy: ['n1', 'n4', 'n8'] });
    expect([...h.nodes.nodes.values()].some((n) => n.unschedulable)).toBe(false);
    await h.flushEvents();
    expect(reasons(h)).toEqual([`${BREAKER_CONFIGMAP}:RemediationBreakerOpen`]);
  });

  it('device taints: a fleet-wide failure below minDevices opens the breaker and taints nothing', async () => {
    const taints = new FakeDeviceTaintClient(NS);
    const names = ['n0', 'n1', 'n2', 'n3', 'n4', 'n5', 'n6', 'n7', 'n8', 'n9'];
    for (const node of names) {
      taints.slices.set(node, [
        {
          metadata: { name: `${node}-slice` },
          spec: {
            driver: 'fake.npu-fault.io',
            nodeName: node,
            pool: { name: node, generation: 1 },
            devices: [
              { name: 'npu3', attributes: { 'resource.kubernetes.io/pciBusID': { string: '0000:3b:00.0' } } },
            ],
          },
        },
      ]);
    }
    const h = harness(
      { mode: 'cordon', trigger: { minDevices: 2 }, deviceTaints: { enabled: true } },
      names,
      taints,
    );
    for (const node of names) {
      const entry = failedEntry(node);
      entry.npus = entry.npus.map((npu) => ({ ...npu, key: '0000:3b:00.0' }));
      h.entries.set(node, entry);
    }
    await h.start();
    const stored = await h.configMaps.get(
      { namespace: NS, name: BREAKER_CONFIGMAP },
      new AbortController().signal,
    );
    expect(decodeBreaker(stored?.data[BREAKER_KEY]).value?.state).toBe('open');
    expect(taints.writes).toEqual([]);
    expect([...h.nodes.nodes.values()].some((n) => n.unschedulable)).toBe(false);
  });

  it('treats an unreadable breaker record as open and says how to fix it', async () => {
    const h = harness({ mode: 'cordon' });
    await h.configMaps.create(
      { namespace: NS, name: BREAKER_CONFIGMAP },
      { labels: {}, data: { [BREAKER_KEY]: '{"state":"half"}' } },
      new AbortController().signal,
    );
    h.entries.set('n3', failedEntry('n3'));
    await h.start();
    expect(h.nodes.nodes.get('n3')?.unschedulable).toBe(false);
    await h.flushEvents();
    const event = [...h.events.events.values()].find((e) => e.reason === 'RemediationBreakerInvalid');
    expect(event?.message).toContain(`${BREAKER_CONFIGMAP}/${BREAKER_KEY}/state`);
  });

  it('does not write once the term is over (the fence)', async () => {
    const h = harness({ mode: 'cordon' });
    h.leading.value = false;
    h.entries.set('n3', failedEntry('n3'));
    await h.start();
    expect(h.nodes.writes).toEqual([]);
  });

  it('does not write when the term ends between the decision and the write', async () => {
    const h = harness({ mode: 'cordon' });
    h.entries.set('n3', failedEntry('n3'));
    const realGet = h.nodes.get.bind(h.nodes);
    h.nodes.get = async (node: string) => {
      h.leading.value = false; // the lease is lost while the Node is re-read
      return realGet(node);
    };
    await h.start();
    expect(h.nodes.writes).toEqual([]);
    expect(h.nodes.nodes.get('n3')?.unschedulable).toBe(false);
  });

  it('acts only if the Node still holds the record the decision saw', async () => {
    const h = harness({ mode: 'cordon', uncordon: { enabled: true, holdSeconds: 0 } });
    const held: NodeRecord = {
      phase: 'cordoned',
      by: 'x',
      term: 1,
      since: new Date(T0).toISOString(),
      reason: 'r',
      devices: [],
      tainted: false,
      drainStartedAt: null,
      drainFinishedAt: null,
      blocking: [],
      recoveredAt: null,
      releasedAt: null,
    };
    h.nodes.put('n3', {
      unschedulable: true,
      annotations: { [REMEDIATION_ANNOTATION]: encodeNodeRecord(held) },
    });
    // Someone rewrites the record between the cache read and the write: the fake's get returns
    // the new one, so the write is skipped.
    const realGet = h.nodes.get.bind(h.nodes);
    h.nodes.get = async (node: string) => {
      const state = await realGet(node);
      return (
        state && { ...state, annotations: { ...state.annotations, [REMEDIATION_ANNOTATION]: 'changed' } }
      );
    };
    await h.start();
    expect(h.nodes.writes).toEqual([]);
  });

  it('drains after the cordon, passing the failed devices, and records the outcome', async () => {
    const h = harness({ mode: 'drain', drain: { perDevice: true } });
    h.entries.set('n3', failedEntry('n3'));
    await h.start();
    // The cordon pass; the drain starts on the next (its delay is 0).
    await h.pass();
    expect(record(h, 'n3')?.phase).toBe('draining');
    expect(h.drains.map((d) => [d.node, d.devices])).toEqual([['n3', ['Ascend910-3']]]);
    const next = h.remediator.nextPass();
    h.drains[0]?.resolve({ outcome: 'drained', evicted: ['team/a', 'team/b'], forced: [], blocking: [] });
    await next;
    expect(record(h, 'n3')).toMatchObject({ phase: 'drained', blocking: [] });
    expect(record(h, 'n3')?.drainFinishedAt).not.toBeNull();
    await h.flushEvents();
    expect(reasons(h)).toEqual(['n3:DrainStarted', 'n3:NodeCordoned', 'n3:NodeDrained']);
  });

  it('records the blocking pods of a drain that timed out', async () => {
    const h = harness({ mode: 'drain' });
    h.entries.set('n3', failedEntry('n3'));
    await h.start();
    await h.pass();
    const next = h.remediator.nextPass();
    h.drains[0]?.resolve({
      outcome: 'timed-out',
      evicted: [],
      forced: [],
      blocking: [{ pod: 'team/db-0', reason: 'eviction refused: PDB' }],
    });
    await next;
    expect(record(h, 'n3')).toMatchObject({
      phase: 'blocked',
      blocking: ['team/db-0: eviction refused: PDB'],
    });
    await h.flushEvents();
    expect([...h.events.events.values()].find((e) => e.reason === 'DrainBlocked')?.message).toContain(
      'team/db-0',
    );
  });

  it('stops a drain when a person uncordons the node, and respects it', async () => {
    const h = harness({ mode: 'drain' });
    h.entries.set('n3', failedEntry('n3'));
    await h.start();
    await h.pass();
    const drain = h.drains[0];
    const state = h.nodes.nodes.get('n3');
    if (!state || !drain) throw new Error('no drain');
    h.nodes.nodes.set('n3', { ...state, unschedulable: false, resourceVersion: '999' });
    await h.pass();
    expect(record(h, 'n3')).toMatchObject({ phase: 'overridden', tainted: false });
    expect(h.nodes.nodes.get('n3')?.taints).toEqual([]);
    await h.pass();
    expect(drain.signal.aborted).toBe(true);
    expect(h.nodes.nodes.get('n3')?.unschedulable).toBe(false);
  });

  it('a Node cache lagging behind its own writes neither stops a new drain nor restarts a finished one', async () => {
    const h = harness({ mode: 'drain' });
    h.entries.set('n3', failedEntry('n3'));
    await h.start(); // cordoned
    h.lag(true); // the watch has not delivered what comes next
    await h.pass(); // draining written; the cache still says cordoned
    await h.pass();
    expect(h.drains).toHaveLength(1);
    expect(h.drains[0]?.signal.aborted).toBe(false);
    h.lag(false);
    await h.pass(); // the cache says draining
    h.lag(true);
    const next = h.remediator.nextPass();
    h.drains[0]?.resolve({ outcome: 'drained', evicted: [], forced: [], blocking: [] });
    await next;
    await h.pass(); // the cache still says draining, the Node says drained: no second drain
    expect(record(h, 'n3')?.phase).toBe('drained');
    expect(h.drains).toHaveLength(1);
  });

  it('stops a running drain when drain mode is turned off (hot), and does not resume it in mode cordon', async () => {
    const settings = { current: { mode: 'drain' } as RemediationConfigInput };
    const h = harness(settings);
    h.entries.set('n3', failedEntry('n3'));
    await h.start();
    await h.pass();
    expect(h.drains).toHaveLength(1);
    settings.current = { mode: 'cordon' };
    await h.pass();
    expect(h.drains[0]?.signal.aborted).toBe(true);
    await h.pass();
    expect(h.drains).toHaveLength(1);
    expect(record(h, 'n3')?.phase).toBe('draining');
  });

  it('dry run: decides and reports once, changes nothing', async () => {
    const h = harness({ mode: 'drain', dryRun: true });
    h.entries.set('n3', failedEntry('n3'));
    for (const node of ['n5', 'n6']) h.entries.set(node, null);
    await h.start();
    await h.pass();
    expect(h.nodes.writes).toEqual([]);
    expect(h.drains).toEqual([]);
    expect(h.configMaps.calls.filter((c) => c.op !== 'get')).toEqual([]);
    await h.flushEvents();
    const dry = [...h.events.events.values()].filter((e) => e.reason === 'RemediationDryRun');
    expect(dry.map((e) => [e.involvedObject.name, e.message, e.count])).toEqual([
      ['n3', 'would cordon: npu3: pcie-link-down', 1],
    ]);
  });

  it('thermal preset: drains a node hot for forSeconds across passes; remediation off restarts the hold', async () => {
    const on: RemediationConfigInput = { mode: 'drain', thermalEviction: { enabled: true, forSeconds: 30 } };
    const settings = { current: on };
    const h = harness(settings);
    const hotGauge = async (): Promise<number | undefined> =>
      (await h.registry.getSingleMetric('npu_fault_controller_remediation_hot_devices')?.get())?.values[0]
        ?.value;
    h.entries.set('n3', hotEntry('n3'));
    await h.start(); // the hold starts at T0
    expect(await hotGauge()).toBe(1);
    await h.clock.advance(29_000);
    await h.pass(); // T0 + 29.25 s: passes every 2 s meanwhile, none past the hold
    expect(record(h, 'n3')).toBeUndefined();

    // Remediation off for a pass: nobody watched the device, so its hold starts again.
    settings.current = { ...on, mode: 'off' };
    await h.pass();
    expect(await hotGauge()).toBe(0);
    settings.current = on;
    await h.pass();
    await h.clock.advance(20_000);
    await h.pass(); // 50 s after the first hot pass, about 20 s into the new hold
    expect(record(h, 'n3')).toBeUndefined();
    expect(h.nodes.writes).toEqual([]);

    await h.clock.advance(10_000);
    await h.pass(); // the new hold is over: cordoned, then drained on the next pass (delay 0)
    const held = record(h, 'n3');
    expect(held).toMatchObject({ phase: 'draining', devices: ['Ascend910-3'] });
    expect(held?.reason).toMatch(/^npu3: high-temp for 3\d s at 92 °C$/);
    // Cordoned 30 s into the second hold (it began about 29.75 s after T0), not the first.
    expect(Date.parse(held?.since ?? '') - T0).toBeGreaterThanOrEqual(59_750);
    expect(h.drains.map((d) => [d.node, d.devices])).toEqual([['n3', ['Ascend910-3']]]);
    await h.flushEvents();
    expect(reasons(h)).toEqual(['n3:DrainStarted', 'n3:NodeCordoned']);
  });

  it('thermal preset off (the default): a device hot for ten minutes is left alone', async () => {
    const h = harness({ mode: 'drain' });
    h.entries.set('n3', hotEntry('n3'));
    await h.start();
    await h.clock.advance(600_000);
    await h.pass();
    expect(h.nodes.writes).toEqual([]);
    expect(h.drains).toEqual([]);
    expect(
      (await h.registry.getSingleMetric('npu_fault_controller_remediation_hot_devices')?.get())?.values[0]
        ?.value,
    ).toBe(0);
  });
});
