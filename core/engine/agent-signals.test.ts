// What the node agent adds to a snapshot besides the tool's readings, through the engine:
// the inference canary (`canary`) and devices the tool lists but cannot read (`readable`).
import { describe, expect, it } from '@jest/globals';
import {
  DEFAULT_RULES,
  MAX_WATCHED_XIDS,
  publishedDocumentSchema,
  rulesSchema,
  type PublishedDevice,
  type RulesInput,
} from '../../contracts/index.js';
import { createEngine, parseTimestamp, type ReloadableEngine, type Transition } from './index.js';
import { compileReasons } from './reasons.js';
import { at, gpuSnapshot, type GpuSpec } from './testing.js';

/** One engine fed at now = collected_at, with every transition kept as `t:id:from>to:reason`. */
class Node {
  readonly engine: ReloadableEngine;
  readonly changes: string[] = [];
  #seq = 0;
  constructor(rules: RulesInput = {}) {
    this.engine = createEngine(rulesSchema.parse(rules));
  }
  /** One sample of two healthy GPUs (or `gpus`), the canary reporting `canaryFailures`. */
  sample(t: number, canaryFailures?: number, gpus: GpuSpec[] = [{ index: 0 }, { index: 1 }]): void {
    const snapshot = gpuSnapshot({ seq: ++this.#seq, t, canaryFailures }, gpus);
    const out = this.engine.observe(snapshot, parseTimestamp(snapshot.collected_at)).transitions;
    this.changes.push(...out.map(compact));
  }
  /** The published entry of a device, or undefined when it is not listed. */
  device(id: string, t: number): PublishedDevice | undefined {
    const doc = publishedDocumentSchema.parse(this.engine.document(at(t), { identity: 'test', term: 1 }));
    return doc.nodes['node-a']?.npus.find((d) => d.id === id);
  }
}

function compact(x: Transition): string {
  return `${(parseTimestamp(x.at) - at(0)) / 1000}:${x.npu}:${x.from}>${x.to}:${x.reason}`;
}

/** Failed canary requests in a row at second `t` when every request from `from` on fails. */
const failingFrom =
  (from: number) =>
  (t: number): number =>
    t < from ? 0 : t - from + 1;

describe('inference canary (snapshot `canary`)', () => {
  it('raises inference-canary-failed on every device of the node from the 2nd failed request in a row', () => {
    const node = new Node();
    node.sample(0, 0);
    node.sample(1, 1);
    expect(node.device('gpu0', 1)).toBeUndefined();
    node.sample(2, 2);
    for (const id of ['gpu0', 'gpu1']) {
      expect(node.device(id, 2)).toMatchObject({
        status: 'healthy',
        reason: null,
        reasons: ['inference-canary-failed'],
        signals: ['inference-canary-failed'],
      });
    }
    expect(node.changes).toEqual(['0:gpu0:unknown>healthy:null', '0:gpu1:unknown>healthy:null']);
  });

  it('degrades the devices after 60 s and holds them degraded, never failed, until 5 passing samples', () => {
    const node = new Node();
    const failures = failingFrom(1);
    for (let t = 0; t <= 400; t++) node.sample(t, failures(t));
    for (let t = 401; t <= 406; t++) node.sample(t, 0);
    // Active from t=2 (the 2nd failure): degraded at t=62; 340 s degraded without failing.
    expect(node.changes).toEqual([
      '0:gpu0:unknown>healthy:null',
      '0:gpu1:unknown>healthy:null',
      '62:gpu0:healthy>degraded:inference-canary-failed',
      '62:gpu1:healthy>degraded:inference-canary-failed',
      '405:gpu0:degraded>healthy:null',
      '405:gpu1:degraded>healthy:null',
    ]);
  });

  it('fails a device whose other warning runs out the 180 s while the canary holds it degraded', () => {
    const node = new Node();
    for (let t = 0; t <= 300; t++)
      node.sample(t, failingFrom(1)(t), [{ index: 0, temp: t >= 250 ? 90 : 40 }]);
    // Degraded at 62 by the canary; high-temp holds from t=252 (3 of 5 hot): a warning that may fail.
    expect(node.changes).toEqual([
      '0:gpu0:unknown>healthy:null',
      '62:gpu0:healthy>degraded:inference-canary-failed',
      '252:gpu0:degraded>failed:high-temp',
    ]);
    expect(node.device('gpu0', 300)?.reasons).toEqual(['high-temp', 'inference-canary-failed']);
  });

  it('fails after 180 s degraded with fail_after_degraded, and at once when critical', () => {
    const slow = new Node({ inference_canary: { fail_after_degraded: true } });
    const fast = new Node({ inference_canary: { severity: 'critical', min_failures: 3 } });
    for (let t = 0; t <= 250; t++) {
      slow.sample(t, failingFrom(1)(t), [{ index: 0 }]);
      fast.sample(t, failingFrom(1)(t), [{ index: 0 }]);
    }
    expect(slow.changes.slice(1)).toEqual([
      '62:gpu0:healthy>degraded:inference-canary-failed',
      '242:gpu0:degraded>failed:inference-canary-failed',
    ]);
    expect(fast.changes.slice(1)).toEqual(['3:gpu0:healthy>failed:inference-canary-failed']);
  });

  it('orders the canary after the device warnings and before the overlays', () => {
    const node = new Node();
    for (let t = 0; t <= 5; t++) node.sample(t, 5, [{ index: 0, temp: 90 }]);
    expect(node.device('gpu0', 5)?.reasons).toEqual(['high-temp', 'inference-canary-failed']);
    node.engine.tick(at(11));
    expect(node.device('gpu0', 11)?.reasons).toEqual([
      'high-temp',
      'inference-canary-failed',
      'agent-unreachable',
    ]);
  });

  it('ignores a node that sends no canary, and a passing one', () => {
    const node = new Node();
    for (let t = 0; t <= 100; t++) node.sample(t, t % 2 === 0 ? undefined : 0);
    expect(node.device('gpu0', 100)).toBeUndefined();
    expect(node.changes).toEqual(['0:gpu0:unknown>healthy:null', '0:gpu1:unknown>healthy:null']);
  });

  it('keeps every reason in one 32-bit mask with the most XIDs the rules allow', () => {
    const watched = Array.from({ length: MAX_WATCHED_XIDS }, (_, i) => i + 1);
    const table = compileReasons(rulesSchema.parse({ xids: { watched, critical: [] } }));
    expect(table.names).toHaveLength(32);
    expect(table.names[31]).toBe('inference-canary-failed');
    expect(table.bit('inference-canary-failed') & table.critical).toBe(0);
    expect(compileReasons(DEFAULT_RULES).names.at(-1)).toBe('inference-canary-failed');
  });
});

describe('a GPU the tool lists but cannot read (readable: false)', () => {
  it('is healthy with unknown metrics, while a GPU with null metrics and no flag is off the bus', () => {
    const node = new Node();
    node.sample(0, undefined, [
      { index: 0, unreadable: true },
      { index: 1, lost: true },
    ]);
    expect(node.changes).toEqual(['0:gpu0:unknown>healthy:null', '0:gpu1:unknown>failed:npu-offline']);
    expect(node.device('gpu0', 0)).toBeUndefined();
  });

  it('still fails on a critical XID, and goes missing when it leaves the listing', () => {
    const node = new Node();
    node.sample(0, undefined, [
      { index: 0, unreadable: true },
      { index: 1, unreadable: true },
    ]);
    node.sample(1, undefined, [
      { index: 0, unreadable: true, xids: [{ xid: 79, at: '2026-11-29T08:00:01Z' }] },
      { index: 1, unreadable: true },
    ]);
    node.sample(2, undefined, [{ index: 0, unreadable: true }]);
    expect(node.changes.slice(2)).toEqual([
      '1:gpu0:healthy>failed:xid-79',
      '2:gpu1:healthy>failed:device-missing',
    ]);
  });
});
