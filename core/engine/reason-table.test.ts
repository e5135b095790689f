import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import {
  DEFAULT_LATCHED,
  DEFAULT_RULES,
  REASONS,
  contractReasonTables,
  rulesSchema,
  rulesSchemaFor,
} from '../../contracts/index.js';
import {
  REASON_TABLE,
  createEngine,
  type NodeExplanation,
  type ReasonEntry,
  type SampleCheck,
} from './index.js';
import { compileReasons, composeChecks } from './reasons.js';
import { at, npuSnapshot } from './testing.js';

// A reason is one entry of the table plus its check: these toys are added to the product's
// table through the API the product builds its engine with, and nothing else changes.

/** A device reason: a chip drawing more than 600 W, a warning placed right after high-temp. */
const powerSpike: ReasonEntry = {
  id: 'power-spike',
  name: 'power-spike',
  scope: 'device',
  severity: 'warning',
  kind: 'level',
  section: [],
  explain: () => 'drawing more than 600 W',
  contract: { when: '`power_w` is above 600 W', lasts: 'while true' },
  raise: {
    check: (ctx) => {
      const bit = ctx.bit('power-spike');
      return (_, obs) => (obs.power_w !== null && obs.power_w > 600 ? bit : 0);
    },
  },
};

/** A node reason: the node's canary failing 5 requests in a row, checked on each fresh snapshot. */
const servingDown: ReasonEntry = {
  id: 'serving-down',
  name: 'serving-down',
  scope: 'node',
  section: ['inference_canary'],
  explain: () => 'the inference canary failed 5 requests in a row',
  contract: { when: 'the canary reports 5 failed requests in a row', lifted: 'a snapshot with fewer' },
  raise: { check: () => (snapshot) => (snapshot.payload.canary?.consecutive_failures ?? 0) >= 5 },
};

const highTemp = REASON_TABLE.findIndex((r) => r.id === 'high-temp');
const TABLE: readonly ReasonEntry[] = [
  ...REASON_TABLE.slice(0, highTemp + 1),
  powerSpike,
  ...REASON_TABLE.slice(highTemp + 1),
  servingDown,
];

function tracked(result: ReturnType<ReturnType<typeof createEngine>['explain']>): NodeExplanation {
  if (!result.tracked) throw new Error(result.message);
  return result;
}

describe('a reason added as one table entry plus its check', () => {
  it('is evaluated, ordered in its place and published, by the engine the product builds', () => {
    const engine = createEngine(DEFAULT_RULES, { reasons: TABLE });
    for (let i = 0; i <= 7; i++) {
      const npus = [{ npu: 0, temp: 90, power: 700 }, { npu: 1 }];
      engine.observe(npuSnapshot({ seq: i + 1, t: i * 10 }, npus), at(i * 10));
    }
    const device = engine.document(at(70), { identity: 't', term: 1 }).nodes['node-a']?.npus[0];
    // Degraded at t = 60 by the warnings that began at t = 0; high-temp comes first in the order.
    expect(device).toMatchObject({ status: 'degraded', reason: 'high-temp' });
    expect(device?.reasons).toEqual(['high-temp', 'power-spike']);

    const table = compileReasons(DEFAULT_RULES, TABLE);
    expect(table.names.slice(table.names.indexOf('high-temp'), table.names.indexOf('high-temp') + 3)).toEqual(
      ['high-temp', 'power-spike', 'ecc-error'],
    );
    expect(table.bit('power-spike') & (table.critical | table.events | table.latched)).toBe(0);
    // The product's reasons keep their order: the toy only shifts the bits after it.
    expect(table.names.filter((n) => n !== 'power-spike')).toEqual(compileReasons(DEFAULT_RULES).names);
  });

  it('is explained with its rule', () => {
    const engine = createEngine(DEFAULT_RULES, { reasons: TABLE });
    engine.observe(npuSnapshot({ seq: 1, t: 0 }, [{ npu: 0, power: 700 }]), at(0));
    const [device] = tracked(engine.explain('node-a', 'npu0', at(0))).devices;
    expect(device?.active).toEqual([
      { name: 'power-spike', severity: 'warning', latched: false, rule: 'drawing more than 600 W' },
    ]);
  });

  it('may be latched by the rules its table derives, and not by the product’s', () => {
    const latched = [...DEFAULT_LATCHED, 'power-spike'];
    expect(rulesSchema.safeParse({ latched }).success).toBe(false);
    const rules = rulesSchemaFor(TABLE).parse({ latched });
    const engine = createEngine(rules, { reasons: TABLE });
    engine.observe(npuSnapshot({ seq: 1, t: 0 }, [{ npu: 0, power: 700 }]), at(0));
    engine.observe(npuSnapshot({ seq: 2, t: 10 }, [{ npu: 0 }]), at(10));
    expect(engine.latched('node-a')).toEqual([
      expect.objectContaining({ id: 'npu0', reasons: ['power-spike'] }),
    ]);
  });

  it('appears in the derived rules JSON Schema and contract tables', () => {
    const schema = JSON.stringify(z.toJSONSchema(rulesSchemaFor(TABLE), { io: 'input' }));
    expect(schema).toContain('"high-temp","power-spike","ecc-error"');
    expect(schema).toContain('"description":"Configures the reasons inference-canary-failed, serving-down."');
    // One more fixed reason leaves bits for one XID fewer.
    expect(rulesSchemaFor(TABLE).safeParse({ xids: { watched: range(20), critical: [] } }).success).toBe(
      false,
    );
    expect(rulesSchemaFor(TABLE).safeParse({ xids: { watched: range(19), critical: [] } }).success).toBe(
      true,
    );

    const tables = contractReasonTables(TABLE, DEFAULT_RULES);
    const product = contractReasonTables(REASONS, DEFAULT_RULES);
    expect(tables.device[highTemp + 1]).toEqual([
      '`power-spike`',
      '`power_w` is above 600 W',
      'warning',
      'while true',
    ]);
    expect(tables.node.at(-1)).toEqual([
      '`serving-down`',
      'the canary reports 5 failed requests in a row',
      'a snapshot with fewer',
      'unchanged',
    ]);
    expect(tables.order).toBe(
      product.order
        .replace('`high-temp`, ', '`high-temp`, `power-spike`, ')
        .replace('`<node-condition>`.', '`<node-condition>`, `serving-down`.'),
    );
  });

  it('as a node reason, holds the node’s devices unknown while its check does, and lifts with it', () => {
    const engine = createEngine(DEFAULT_RULES, { reasons: TABLE });
    engine.observe(npuSnapshot({ seq: 1, t: 0 }, [{ npu: 0 }]), at(0));
    const failing = engine.observe(npuSnapshot({ seq: 2, t: 1, canaryFailures: 5 }, [{ npu: 0 }]), at(1));
    expect(failing.transitions).toEqual([
      expect.objectContaining({ from: 'healthy', to: 'unknown', reason: 'serving-down' }),
    ]);
    const entry = engine.nodeEntry('node-a');
    expect(entry?.agent).toBe('ok');
    expect(entry?.npus[0]?.reasons).toEqual(['inference-canary-failed', 'serving-down']);
    expect(tracked(engine.explain('node-a', undefined, at(1))).overlays).toEqual(['serving-down']);
    const passing = engine.observe(npuSnapshot({ seq: 3, t: 2, canaryFailures: 0 }, [{ npu: 0 }]), at(2));
    expect(passing.transitions).toEqual([expect.objectContaining({ from: 'unknown', to: 'healthy' })]);
  });
});

describe('the product’s reason table', () => {
  it('is the contract’s catalogue, in its order, each reason raised by a check', () => {
    expect(REASON_TABLE.map((r) => r.id)).toEqual(REASONS.map((r) => r.id));
    const checked = new Set(REASON_TABLE.filter((r) => 'check' in r.raise).map((r) => r.id));
    const raisedBy = REASON_TABLE.flatMap((r) => ('by' in r.raise ? [[r.scope, r.raise.by] as const] : []));
    expect(
      raisedBy.filter(([scope, by]) =>
        by === 'engine' || by === 'conditions' ? scope !== 'node' : !checked.has(by),
      ),
    ).toEqual([]);
  });

  it('refuses a table whose reason names no check, or that moves or leaves out a reason the engine raises', () => {
    const orphan = { ...powerSpike, raise: { by: 'no-such-reason' } } as ReasonEntry;
    expect(() => compileReasons(DEFAULT_RULES, [...REASON_TABLE, orphan])).toThrow(/no-such-reason/);
    expect(() => compileReasons(DEFAULT_RULES, [servingDown, ...REASON_TABLE])).toThrow(/agent-unreachable/);
    expect(() =>
      compileReasons(
        DEFAULT_RULES,
        REASON_TABLE.filter((r) => r.id !== 'collector-error'),
      ),
    ).toThrow(/collector-error/);
  });
});

describe('composeChecks', () => {
  it('runs every check once, in order, past the 16 it gives a call site each', () => {
    for (const n of [0, 9, 16, 17, 31]) {
      const ran: number[] = [];
      const checks = Array.from({ length: n }, (_, i) => () => (ran.push(i), 1 << i));
      const device = {} as Parameters<SampleCheck>[0];
      const obs = {} as Parameters<SampleCheck>[1];
      expect(composeChecks(checks)(device, obs)).toBe(n === 31 ? 0x7fffffff : (1 << n) - 1);
      expect(ran).toEqual(range(n).map((i) => i - 1));
    }
  });
});

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i + 1);
}
