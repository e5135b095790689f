import { describe, expect, it } from '@jest/globals';
import type { Counter } from 'prom-client';
import { defaultRules, parseRules, type Rules } from '../../core/rules/index.js';
import { FakeClock, Registry, createLogger } from '../../platform/index.js';
import { FakeListWatchClient } from '../../platform/k8s/watch/testing.js';
import type { RawObject } from '../../platform/k8s/index.js';
import {
  createRulesConfigMapWatch,
  describeRulesSource,
  rulesDataOf,
  type RulesSource,
} from './rules-configmap.js';

const NS = 'ai-infra';
const configMap = (data: Record<string, string>, labels: Record<string, string> = {}): RawObject => ({
  metadata: { name: 'npu-fault-rules', namespace: NS, labels },
  data,
});
const KEY = `${NS}/npu-fault-rules`;

async function reloads(registry: Registry, result: string): Promise<number> {
  const metric = registry.getSingleMetric('npu_fault_controller_rules_reloads_total') as Counter;
  return (await metric.get()).values.find((v) => v.labels.result === result)?.value ?? Number.NaN;
}

function setup(initial?: RawObject, fallback: Rules = defaultRules()) {
  const clock = new FakeClock();
  const client = new FakeListWatchClient();
  const registry = new Registry();
  const calls: string[] = [];
  const applied: { rules: Rules; source: RulesSource }[] = [];
  const watch = createRulesConfigMapWatch(
    { client, clock, log: createLogger({ level: 'silent' }), registry },
    {
      namespace: NS,
      fallback,
      onRules: (rules, source) => {
        applied.push({ rules, source });
        calls.push(`rules ${describeRulesSource(source)}`);
      },
      onInvalid: (message) => calls.push(`invalid ${message}`),
    },
  );
  if (initial) client.apply(initial);
  const stop = new AbortController();
  const running = watch.start(stop.signal);
  return {
    client,
    registry,
    calls,
    applied,
    watch,
    async stop() {
      stop.abort();
      await running;
    },
  };
}

describe('rules ConfigMap', () => {
  it('absent at start: the fallback is in force and nothing is called', async () => {
    const fallback = parseRules('high_temp: {threshold_c: 70}');
    const t = setup(undefined, fallback);
    await t.client.waitForWatch(1);
    expect(t.watch.synced()).toBe(true);
    expect(t.calls).toEqual([]);
    expect(t.watch.current()).toEqual({ rules: fallback, source: { kind: 'fallback' } });
    expect(await reloads(t.registry, 'ok')).toBe(0);
    expect(await reloads(t.registry, 'invalid')).toBe(0);
    await t.stop();
  });

  it('present at start: its rules are loaded, named by key and resourceVersion', async () => {
    const t = setup(configMap({ 'rules.yaml': 'high_temp:\n  threshold_c: 80\n' }));
    await t.client.waitForWatch(1);
    expect(t.calls).toEqual([`rules ${KEY}/rules.yaml@101`]);
    expect(t.applied[0]?.rules.high_temp.threshold_c).toBe(80);
    expect(t.watch.current().source).toEqual({
      kind: 'configmap',
      namespace: NS,
      name: 'npu-fault-rules',
      key: 'rules.yaml',
      resourceVersion: '101',
    });
    expect(await reloads(t.registry, 'ok')).toBe(1);
    await t.stop();
  });

  it('a valid edit reloads; an invalid one keeps the rules in force, reports one line and counts', async () => {
    const t = setup(configMap({ 'rules.yaml': 'high_temp:\n  threshold_c: 80\n' }));
    await t.client.waitForWatch(1);
    t.client.apply(configMap({ 'rules.yaml': 'high_temp:\n  threshold_c: 75\n' }));
    expect(t.watch.current().rules.high_temp.threshold_c).toBe(75);

    t.client.apply(configMap({ 'rules.yaml': 'window_samples: 5\nhigh_temp:\n  threshold_c: hot\n' }));
    expect(t.calls.at(-1)).toBe(
      `invalid ${KEY}/rules.yaml:3: high_temp.threshold_c: Invalid input: expected number, received string`,
    );
    expect(t.watch.current().rules.high_temp.threshold_c).toBe(75);
    expect(t.watch.current().source).toMatchObject({ resourceVersion: '102' });
    expect(await reloads(t.registry, 'invalid')).toBe(1);

    // The same invalid text again (a label edit): judged once, not reported again.
    t.client.apply(
      configMap({ 'rules.yaml': 'window_samples: 5\nhigh_temp:\n  threshold_c: hot\n' }, { edited: 'x' }),
    );
    expect(await reloads(t.registry, 'invalid')).toBe(1);

    t.client.apply(configMap({ 'rules.yaml': 'high_temp:\n  threshold_c: 90\n' }));
    expect(t.watch.current().rules.high_temp.threshold_c).toBe(90);
    expect(t.calls).toEqual([
      `rules ${KEY}/rules.yaml@101`,
      `rules ${KEY}/rules.yaml@102`,
      `invalid ${KEY}/rules.yaml:3: high_temp.threshold_c: Invalid input: expected number, received string`,
      `rules ${KEY}/rules.yaml@105`,
    ]);
    expect(await reloads(t.registry, 'ok')).toBe(3);
    await t.stop();
  });

  it('unchanged text under a new resourceVersion reloads nothing', async () => {
    const t = setup(configMap({ 'rules.yaml': 'window_samples: 6\n' }));
    await t.client.waitForWatch(1);
    t.client.apply(configMap({ 'rules.yaml': 'window_samples: 6\n' }, { team: 'infra' }));
    expect(t.calls).toHaveLength(1);
    await t.stop();
  });

  it('deleted: the fallback once; recreated: loaded again', async () => {
    const t = setup(configMap({ 'rules.yaml': 'window_samples: 6\n' }));
    await t.client.waitForWatch(1);
    t.client.delete(KEY);
    expect(t.calls.at(-1)).toBe('rules fallback');
    expect(t.watch.current()).toEqual({ rules: defaultRules(), source: { kind: 'fallback' } });
    t.client.apply(configMap({ 'rules.yaml': 'window_samples: 6\n' }));
    expect(t.calls).toEqual([`rules ${KEY}/rules.yaml@101`, 'rules fallback', `rules ${KEY}/rules.yaml@103`]);
    await t.stop();
  });

  it('deleted while invalid with the fallback in force: nothing to report', async () => {
    const t = setup(configMap({ 'rules.yaml': 'nonsense: 1\n' }));
    await t.client.waitForWatch(1);
    expect(t.calls).toEqual([`invalid ${KEY}/rules.yaml:1: nonsense: unknown field`]);
    t.client.delete(KEY);
    expect(t.calls).toHaveLength(1);
    await t.stop();
  });

  it('deleted while no watch saw it: the re-list after 410 falls back', async () => {
    const t = setup(configMap({ 'rules.yaml': 'window_samples: 6\n' }));
    await t.client.waitForWatch(1);
    t.client.unseen(() => t.client.delete(KEY));
    t.client.compact({ expireOpen: true });
    await t.client.waitForWatch(2);
    expect(t.calls).toEqual([`rules ${KEY}/rules.yaml@101`, 'rules fallback']);
    await t.stop();
  });

  it.each([
    ['rules.json', { 'rules.json': '{"window_samples": 7}' }, `rules ${KEY}/rules.json@101`],
    [
      'both keys',
      { 'rules.yaml': 'window_samples: 7', 'rules.json': '{}' },
      `invalid ${KEY}: has both rules.yaml and rules.json; keep one`,
    ],
    [
      'neither key',
      { 'rules.yml': 'window_samples: 7' },
      `invalid ${KEY}: has no rules.yaml or rules.json key`,
    ],
    ['syntax error', { 'rules.json': '{"window_samples": ' }, `invalid ${KEY}/rules.json:1:`],
  ])('%s', async (_name, data, expected) => {
    const t = setup(configMap(data));
    await t.client.waitForWatch(1);
    expect(t.calls).toHaveLength(1);
    expect(t.calls[0]?.startsWith(expected)).toBe(true);
    expect(t.calls[0]).not.toContain('\n');
    await t.stop();
  });

  it('a callback that throws is logged; the rules are in force anyway', async () => {
    const client = new FakeListWatchClient();
    const watch = createRulesConfigMapWatch(
      { client, clock: new FakeClock(), log: createLogger({ level: 'silent' }), registry: new Registry() },
      {
        namespace: NS,
        fallback: defaultRules(),
        onRules: () => {
          throw new Error('engine bug');
        },
        onInvalid: () => undefined,
      },
    );
    client.apply(configMap({ 'rules.yaml': 'window_samples: 8' }));
    const stop = new AbortController();
    const running = watch.start(stop.signal);
    await client.waitForWatch(1);
    expect(watch.current().rules.window_samples).toBe(8);
    stop.abort();
    await running;
  });

  it('caches only the two keys', () => {
    expect(
      rulesDataOf(
        {
          metadata: { name: 'npu-fault-rules', resourceVersion: '9' },
          data: { 'rules.yaml': 'a', other: 'b'.repeat(1000) },
        },
        'npu-fault-rules',
      ),
    ).toEqual({ resourceVersion: '9', yaml: 'a', json: undefined });
    expect(rulesDataOf({ metadata: { name: 'other' } }, 'npu-fault-rules')).toBeUndefined();
  });
});
