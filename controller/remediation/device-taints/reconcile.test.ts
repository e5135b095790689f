import { describe, expect, it } from '@jest/globals';
import type { PublishedNode } from '../../../contracts/index.js';
import { K8sApiError, Registry } from '../../../platform/index.js';
import type { EventRecorder } from '../../node-status/index.js';
import { memoryLog } from '../../publisher/testing.js';
import { parseRemediationConfig, type RemediationConfigInput } from '../config.js';
import { parseRemediationText } from '../config-watch.js';
import { createRemediationMetrics } from '../metrics.js';
import { FakeDeviceTaintClient } from './fake-client.js';
import { ruleName } from './desired.js';
import { SLICE_GRACE_MS, createDeviceTaintReconciler } from './reconcile.js';
import { nodeEntryWith } from './testing.js';

const UUID = 'GPU-6a1b2c3d-0000-1111-2222-333344445555';
const RULE = ruleName('ai-infra', 'n1', 'fake.npu-fault.io', 'n1', 'gpu0');

function failedEntry(): PublishedNode {
  return nodeEntryWith('n1', [{ key: UUID, resource_id: UUID }]);
}

const SLICE = {
  metadata: { name: 'n1-fake' },
  spec: {
    driver: 'fake.npu-fault.io',
    nodeName: 'n1',
    pool: { name: 'n1', generation: 1, resourceSliceCount: 1 },
    devices: [
      { name: 'gpu0', attributes: { uuid: { string: UUID } } },
      { name: 'gpu1', attributes: { uuid: { string: UUID.replace('6a', '7b') } } },
    ],
  },
};

function harness() {
  const client = new FakeDeviceTaintClient();
  client.slices.set('n1', [SLICE]);
  const registry = new Registry();
  const metrics = createRemediationMetrics(registry);
  const { log, messages } = memoryLog();
  const recorded: { node: string; reason: string; message: string }[] = [];
  const events: EventRecorder = {
    record: (object, _type, reason, message) => void recorded.push({ node: object.name, reason, message }),
    flush: () => Promise.resolve(),
  };
  const leading = { value: true };
  const reconciler = createDeviceTaintReconciler({
    client,
    events,
    log,
    metrics,
    leading: () => leading.value,
  });
  let entry: PublishedNode | null | undefined = failedEntry();
  const clock = { now: 1_800_000_000_000 };
  const signal = new AbortController().signal;
  const run = (input: RemediationConfigInput = {}, breakerOpen = false) =>
    reconciler.reconcile(
      {
        nodes: [{ name: 'n1', optedOut: false, maintenance: false, entry }],
        config: parseRemediationConfig({ mode: 'cordon', deviceTaints: { enabled: true }, ...input }),
        breakerOpen,
        now: clock.now,
      },
      signal,
    );
  return {
    client,
    clock,
    registry,
    recorded,
    messages,
    leading,
    run,
    setEntry: (e: PublishedNode | null | undefined) => void (entry = e),
    metric: async (name: string) => (await registry.metrics()).split('\n').filter((l) => l.startsWith(name)),
  };
}

describe('device taint reconcile', () => {
  it('taints the failed device once, says so on the Node, and removes the rule on recovery', async () => {
    const h = harness();
    await h.run();
    expect([...h.client.rules.values()].map((r) => [r.name, r.device, r.taint.effect])).toEqual([
      [RULE, 'gpu0', 'NoSchedule'],
    ]);
    await h.run(); // level-triggered: nothing more to do
    expect(h.client.writes).toEqual([{ verb: 'create', name: RULE }]);
    expect(h.recorded.map((e) => e.reason)).toEqual(['DeviceTainted']);
    h.setEntry(undefined); // unobserved (a new leader): no evidence, the rule stays
    await h.run();
    expect(h.client.rules.has(RULE)).toBe(true);
    h.setEntry(null);
    await h.run();
    expect(h.client.rules.size).toBe(0);
    expect(h.recorded.map((e) => e.reason)).toEqual(['DeviceTainted', 'DeviceTaintRemoved']);
  });

  it('adds nothing while the breaker is open, but still removes on recovery', async () => {
    const h = harness();
    await h.run({}, true);
    expect(h.client.rules.size).toBe(0);
    expect(await h.metric('npu_fault_controller_remediation_device_taint_writes_total')).toContainEqual(
      'npu_fault_controller_remediation_device_taint_writes_total{action="create",result="breaker-open"} 1',
    );
    await h.run();
    h.setEntry(null);
    await h.run({}, true);
    expect(h.client.rules.size).toBe(0);
  });

  it('replaces a rule whose taint changed (NoSchedule to NoExecute when drain is chosen)', async () => {
    const h = harness();
    await h.run();
    await h.run({ mode: 'drain', deviceTaints: { enabled: true, effect: 'NoExecute' } });
    expect(h.client.writes.map((w) => w.verb)).toEqual(['create', 'replace']);
    expect(h.client.rules.get(RULE)?.taint.effect).toBe('NoExecute');
  });

  it('writes nothing in a dry run, off, or when not leading, and reports a dry run once', async () => {
    const h = harness();
    await h.run({ dryRun: true });
    await h.run({ dryRun: true });
    expect(h.client.writes).toEqual([]);
    expect(h.recorded).toEqual([
      { node: 'n1', reason: 'RemediationDryRun', message: `would create DeviceTaintRule ${RULE}` },
    ]);
    await h.run({ deviceTaints: { enabled: false } });
    h.leading.value = false;
    await h.run();
    expect(h.client.writes).toEqual([]);
  });

  it('keeps the rules of a node whose slices cannot be read, and survives API failures', async () => {
    const h = harness();
    await h.run();
    h.client.slices.set('n1', [{ metadata: { name: 'broken' }, spec: { driver: 'fake.npu-fault.io' } }]);
    await h.run();
    expect(h.client.rules.has(RULE)).toBe(true);
    expect(await h.metric('npu_fault_controller_remediation_device_taint_invalid_slices')).toContainEqual(
      'npu_fault_controller_remediation_device_taint_invalid_slices 1',
    );
    expect(
      h.messages().filter((m) => m.msg === 'ResourceSlice refused; the node keeps its device taints'),
    ).toHaveLength(1);
    await h.run(); // said once
    expect(
      h.messages().filter((m) => m.msg === 'ResourceSlice refused; the node keeps its device taints'),
    ).toHaveLength(1);
    h.client.failWith = new K8sApiError(403, 'Forbidden');
    await expect(h.run()).resolves.toBeUndefined();
    await h.run();
    const failures = (): number =>
      h.messages().filter((m) => String(m.msg).startsWith('device taints not reconciled')).length;
    expect(failures()).toBe(1); // once per change, counted every time
    expect(
      await h.metric('npu_fault_controller_remediation_device_taint_writes_total{action="list"'),
    ).toEqual(['npu_fault_controller_remediation_device_taint_writes_total{action="list",result="error"} 2']);
  });

  it('lists the slices once a pass, and not at all with the breaker open and no rule to keep', async () => {
    const h = harness();
    await h.run({}, true);
    expect(h.client.sliceLists).toBe(0);
    await h.run();
    expect(h.client.sliceLists).toBe(1);
    // Open again with a rule on the node: its slices tell whether the rule is still wanted.
    await h.run({}, true);
    expect(h.client.sliceLists).toBe(2);
    expect(h.client.rules.has(RULE)).toBe(true);
    h.setEntry(null);
    await h.run({}, true);
    expect(h.client.sliceLists).toBe(2);
    expect(h.client.rules.size).toBe(0);
  });

  it("keeps a node's rules while its slices are gone for less than the grace (a driver restarting)", async () => {
    const h = harness();
    await h.run();
    h.client.slices.delete('n1');
    h.clock.now += SLICE_GRACE_MS - 1;
    await h.run();
    expect(h.client.rules.has(RULE)).toBe(true);
    h.client.slices.set('n1', [SLICE]); // back: the grace starts again from here
    h.clock.now += 1000;
    await h.run();
    h.client.slices.delete('n1');
    h.clock.now += SLICE_GRACE_MS - 1;
    await h.run();
    expect(h.client.rules.has(RULE)).toBe(true);
    h.clock.now += 1;
    await h.run();
    expect(h.client.rules.size).toBe(0);
    // Unreadable slices keep the rules however long.
    await (h.client.slices.set('n1', [SLICE]), h.run());
    h.client.failSlicesWith = new Error('timeout');
    h.clock.now += 10 * SLICE_GRACE_MS;
    await h.run();
    expect(h.client.rules.has(RULE)).toBe(true);
  });

  it('removes every rule it owns once when turned off, then idles until turned on again', async () => {
    const h = harness();
    await h.run();
    await h.run({ deviceTaints: { enabled: false }, dryRun: true });
    expect(h.client.rules.has(RULE)).toBe(true);
    expect(h.recorded.at(-1)?.message).toBe(`would delete DeviceTaintRule ${RULE}`);
    await h.run({ deviceTaints: { enabled: true } });
    await h.run({ deviceTaints: { enabled: false } });
    expect(h.client.rules.size).toBe(0);
    expect(h.recorded.at(-1)).toEqual({
      node: 'n1',
      reason: 'DeviceTaintRemoved',
      message: `DeviceTaintRule ${RULE} removed: device taints turned off`,
    });
    // Idle: a rule appearing now (someone else's doing) is not looked for.
    await h.run();
    const before = h.client.writes.length;
    await h.run({ deviceTaints: { enabled: false } });
    expect(h.client.writes.length).toBe(before + 1);
    const lists = h.client.ruleLists;
    await h.run({ deviceTaints: { enabled: false } });
    expect(h.client.writes.length).toBe(before + 1);
    expect(h.client.ruleLists).toBe(lists); // idle: not even listed
    // Without the RBAC (never turned on): said once at info, not retried.
    const h2 = harness();
    h2.client.failWith = new K8sApiError(403, 'Forbidden');
    await h2.run({ deviceTaints: { enabled: false } });
    await h2.run({ deviceTaints: { enabled: false } });
    expect(h2.client.ruleLists).toBe(1);
    expect(
      h2
        .messages()
        .filter((m) => String(m.msg).startsWith('device taints off; their rules cannot be listed')),
    ).toHaveLength(1);
  });

  it('counts and logs once a device that matches no slice device', async () => {
    const h = harness();
    h.client.slices.set('n1', [{ ...SLICE, spec: { ...SLICE.spec, devices: [{ name: 'gpu9' }] } }]);
    await h.run();
    await h.run();
    expect(h.client.rules.size).toBe(0);
    expect(
      await h.metric('npu_fault_controller_remediation_device_taint_unmatched_devices{why="no-device"}'),
    ).toEqual(['npu_fault_controller_remediation_device_taint_unmatched_devices{why="no-device"} 1']);
    expect(h.messages().filter((m) => m.why === 'no-device')).toHaveLength(1);
  });
});

describe('device taint settings', () => {
  it('default off, NoSchedule, and refuse NoExecute without drain in one line naming the field', () => {
    expect(parseRemediationConfig().deviceTaints).toEqual({
      enabled: false,
      effect: 'NoSchedule',
      taintKey: 'npu-fault.io/device-failed',
    });
    expect(() => parseRemediationConfig({ mode: 'cordon', deviceTaints: { effect: 'NoExecute' } })).toThrow(
      'remediation.deviceTaints.effect: NoExecute evicts pods: needs mode drain (mode is cordon)',
    );
    // The same refusal when the hot-reloaded ConfigMap says it (the settings in force stay).
    expect(
      parseRemediationText(
        'mode: cordon\ndeviceTaints: {enabled: true, effect: NoExecute}\n',
        'remediation.yaml',
      ),
    ).toEqual({
      error:
        'remediation.yaml:2: deviceTaints.effect: NoExecute evicts pods: needs mode drain (mode is cordon)',
    });
    expect(() => parseRemediationConfig({ deviceTaints: { taintKey: 'bad key' } })).toThrow(
      /^remediation\.deviceTaints\.taintKey: must be a label name/,
    );
    expect(
      parseRemediationConfig({ mode: 'drain', deviceTaints: { effect: 'NoExecute' } }).deviceTaints.effect,
    ).toBe('NoExecute');
  });

  it('makes every rule a dependent of the granting ClusterRole, and re-owns a rule of an older version or of a grant recreated', async () => {
    const h = harness();
    await h.run();
    expect(h.client.rules.get(RULE)?.ownerUids).toEqual(['grant-uid-1']);
    const writes = h.client.writes.length;
    await h.run(); // nothing changed: no write
    expect(h.client.writes).toHaveLength(writes);
    // The grant recreated (a new uid): the rule is replaced to name it.
    h.client.grant = { ...(h.client.grant ?? { apiVersion: '', kind: '', name: '' }), uid: 'grant-uid-2' };
    await h.run();
    expect(h.client.writes.at(-1)).toEqual({ verb: 'replace', name: RULE });
    expect(h.client.rules.get(RULE)?.ownerUids).toEqual(['grant-uid-2']);
  });

  it('writes rules without an owner when the grant cannot be read, said once; reads it only in a pass that may write', async () => {
    const h = harness();
    h.client.grant = undefined;
    await h.run();
    await h.run();
    expect(h.client.rules.get(RULE)?.ownerUids).toEqual([]);
    expect(h.messages().filter((m) => String(m.msg).includes('cannot be read'))).toHaveLength(1);
    const reads = h.client.grantReads;
    await h.run({ dryRun: true });
    await h.run({}, true); // breaker open
    expect(h.client.grantReads).toBe(reads);
  });
});
