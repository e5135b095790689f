/**
 * The fast path against the schema it stands in for: on every input, it returns exactly what
 * `snapshotSchema` returns (values and key order) when the schema accepts, and undefined
 * when the schema refuses. Generated valid snapshots of the three families, then mutations
 * of them aimed at every rule: each bound just inside and just past (the readings' bounds
 * too), wrong types, keys left out or added, arrays grown past their limits.
 */
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import type { z } from 'zod';
import { readExampleJson } from '../test/fixtures.js';
import { gpuSnapshot } from './testing.js';
import { snapshotBatchSchema } from './ingest.js';
import { observationsRequestSchema } from './observations.js';
import { READING_BOUNDS, SNAPSHOT_LIMITS, snapshotSchema, type ReadingKind } from './snapshot.js';
import { NODE_PROBLEM_REASONS } from './fields/index.js';
import {
  fastParseObservationsRequest,
  fastParseSnapshot,
  fastParseSnapshotBatch,
} from './snapshot-fast-path.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The fast path agrees with the schema on `input`; which way it went. */
function agrees(input: unknown): 'accepted' | 'refused' {
  const slow = snapshotSchema.safeParse(input);
  const fast = fastParseSnapshot(input);
  if (!slow.success) {
    expect(fast).toBeUndefined();
    return 'refused';
  }
  expect(fast).toStrictEqual(slow.data);
  expect(JSON.stringify(fast)).toBe(JSON.stringify(slow.data));
  return 'accepted';
}

const limits = Object.values(SNAPSHOT_LIMITS);
/** Array lengths a `grow` mutation tries: empty, one, and each bound and one past it. */
const ARRAY_LENGTHS = [0, 1, ...limits.flatMap((n) => [n, n + 1]).filter((n) => n <= 1025)];

/** Strings of lengths around `min` and `max`, and between. */
function text(min: number, max: number): fc.Arbitrary<string> {
  return fc.oneof(
    fc.string({ minLength: min, maxLength: Math.min(max, min + 8) }),
    fc.constantFrom(...new Set([min, max].filter((n) => n >= 0))).map((n) => 'x'.repeat(n)),
  );
}

/** The nearest double above `x` (direction 1) or below it (-1): just past a bound. */
function nextDouble(x: number, direction: 1 | -1): number {
  if (x === 0) return direction * Number.MIN_VALUE;
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  view.setBigInt64(0, view.getBigInt64(0) + (x > 0 === direction > 0 ? 1n : -1n));
  return view.getFloat64(0);
}

const count = fc.oneof(fc.nat(), fc.constantFrom(0, 1, Number.MAX_SAFE_INTEGER));
/** Valid readings of `kind`: null, anything within its bounds, and the bounds themselves. */
const reading = (kind: ReadingKind): fc.Arbitrary<number | null> => {
  const { min, max } = READING_BOUNDS[kind];
  return fc.oneof(fc.constant(null), fc.double({ min, max, noNaN: true }), fc.constantFrom(min, max));
};
const xid = fc.oneof(
  fc.integer({ min: READING_BOUNDS.xid.min, max: READING_BOUNDS.xid.max }),
  fc.constantFrom(READING_BOUNDS.xid.min, READING_BOUNDS.xid.max),
);
const faultCode = fc.stringMatching(/^[0-9A-Fa-f]{1,16}$/);
const errorCodes = fc.array(faultCode, { maxLength: 4 });
const busId = fc.oneof(fc.constant(null), text(1, SNAPSHOT_LIMITS.busId));

/** ISO-8601 times zod's datetime accepts: Z or an offset, with or without a fraction. */
const isoTime = fc
  .tuple(
    fc.date({
      min: new Date('1970-01-02T00:00:00Z'),
      max: new Date('9998-12-30T00:00:00Z'),
      noInvalidDate: true,
    }),
    fc.constantFrom('Z', '+00:00', '+05:30', '-08:00'),
    fc.constantFrom('', '.5', '.123', '.123456789'),
  )
  .map(([date, zone, fraction]) => `${date.toISOString().slice(0, 19)}${fraction}${zone}`);

/** `record` with each key of `optional` present or left out. */
function withOptional<T extends Record<string, fc.Arbitrary<unknown>>>(
  required: T,
  optional: Record<string, fc.Arbitrary<unknown>>,
): fc.Arbitrary<Record<string, unknown>> {
  return fc.record(
    { ...required, ...optional },
    { requiredKeys: Object.keys(required) as (keyof T & string)[] },
  );
}

const readable = { readable: fc.boolean() };

const npu910 = withOptional(
  { npu: count },
  {
    chip: count,
    phy_id: fc.oneof(fc.constant(null), count),
    name: text(0, SNAPSHOT_LIMITS.id),
    health: text(0, SNAPSHOT_LIMITS.health),
    temp_c: reading('temperature'),
    power_w: reading('power'),
    aicore_pct: reading('utilisation'),
    hbm: withOptional(
      {},
      {
        used_mb: reading('memory'),
        total_mb: reading('memory'),
        temp_c: reading('temperature'),
        ecc: withOptional({}, { single_bit: reading('errorCount'), double_bit: reading('errorCount') }),
      },
    ),
    pcie: withOptional({}, { bus_id: busId, link: fc.constantFrom(null, 'up', 'down') }),
    error_codes: errorCodes,
    present: fc.boolean(),
    ...readable,
  },
);

const chip310 = withOptional(
  { chip: count, device_id: count },
  {
    health: text(0, SNAPSHOT_LIMITS.health),
    temperature: reading('temperature'),
    power_w: reading('power'),
    ddr: withOptional(
      {},
      {
        used_mb: reading('memory'),
        total_mb: reading('memory'),
        ecc_sbe: reading('errorCount'),
        ecc_dbe: reading('errorCount'),
      },
    ),
    error_codes: errorCodes,
    present: fc.boolean(),
    ...readable,
  },
);

const card310 = withOptional(
  { card: count, chips: fc.array(chip310, { maxLength: 4 }) },
  {
    name: text(0, SNAPSHOT_LIMITS.id),
    bus_id: busId,
    pcie_link: fc.constantFrom(null, 0, 1),
    mcu_power_w: reading('power'),
  },
);

const gpu = withOptional(
  { index: count },
  {
    uuid: fc.oneof(fc.constant(null), text(0, SNAPSHOT_LIMITS.id)),
    bus_id: busId,
    name: text(0, SNAPSHOT_LIMITS.id),
    temperature_gpu: reading('temperature'),
    power_draw_w: reading('power'),
    ecc_corrected_volatile: reading('errorCount'),
    ecc_uncorrected_volatile: reading('errorCount'),
    pcie_link_gen: reading('pcieGeneration'),
    pcie_link_width: reading('pcieWidth'),
    xid_events: fc.array(withOptional({ xid }, { at: fc.oneof(fc.constant(null), isoTime) }), {
      maxLength: 3,
    }),
    present: fc.boolean(),
    ...readable,
  },
);

const canary = fc
  .tuple(fc.boolean(), fc.integer({ min: 1, max: SNAPSHOT_LIMITS.canaryFailures }), fc.option(isoTime))
  .map(([ok, failures, at]) => ({
    ok,
    consecutive_failures: ok ? 0 : failures,
    ...(at === null ? {} : { at }),
  }));

const nodeProblems = fc.array(
  withOptional(
    {
      reason: fc.oneof(
        fc.constantFrom(...NODE_PROBLEM_REASONS),
        fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/),
        fc.constant('r'.repeat(SNAPSHOT_LIMITS.label)),
      ),
    },
    { message: text(0, SNAPSHOT_LIMITS.problemMessage) },
  ),
  { maxLength: 3 },
);

const kubernetesLabel = fc.oneof(
  fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?$/),
  fc.constant('l'.repeat(SNAPSHOT_LIMITS.dnsLabel)),
);
const deviceHolders = fc.array(
  fc.record({
    resource_id: fc.oneof(fc.constantFrom('Ascend910-3', 'GPU-0'), text(1, SNAPSHOT_LIMITS.id)),
    pods: fc.array(
      fc.record({
        namespace: kubernetesLabel,
        name: fc.oneof(
          fc.stringMatching(/^[a-z0-9]([-a-z0-9.]{0,12}[a-z0-9])?$/),
          fc.constant('p'.repeat(SNAPSHOT_LIMITS.node)),
        ),
        container: kubernetesLabel,
      }),
      { maxLength: 3 },
    ),
  }),
  { maxLength: 3 },
);

const optionalPayload = {
  driver_version: text(0, SNAPSHOT_LIMITS.label),
  canary,
  node_problems: nodeProblems,
  device_holders: deviceHolders,
};
const payload = fc.oneof(
  withOptional({ family: fc.constant('910B'), npus: fc.array(npu910, { maxLength: 8 }) }, optionalPayload),
  withOptional({ family: fc.constant('310P'), cards: fc.array(card310, { maxLength: 3 }) }, optionalPayload),
  withOptional({ family: fc.constant('nvidia'), gpus: fc.array(gpu, { maxLength: 8 }) }, optionalPayload),
);

const nodeName = fc.oneof(
  fc.stringMatching(/^[a-z0-9]([-a-z0-9.]{0,20}[a-z0-9])?$/),
  fc.constant('n'.repeat(SNAPSHOT_LIMITS.node)),
);

/** Valid wire-form snapshots of every family, optional keys present or left out. */
const validSnapshot = withOptional(
  {
    schema: fc.constant('hdc.health/v1'),
    node: nodeName,
    seq: count,
    collected_at: fc.oneof(isoTime, fc.constantFrom('1970-01-01T00:00:00Z', '9998-12-31T23:59:59.999Z')),
    collector: text(1, SNAPSHOT_LIMITS.label),
    payload,
  },
  { boot_id: text(0, SNAPSHOT_LIMITS.id), cached: fc.boolean() },
) as fc.Arbitrary<Json>;

/**
 * Each reading bound, the nearest doubles past it, and a whole unit past it; and the glitches
 * tools print for a sensor they cannot read (an 8-, 16-, 32-bit all-ones, -1, 1e300).
 */
const READING_EDGES: number[] = [
  ...new Set([
    ...Object.values(READING_BOUNDS).flatMap(({ min, max }) => [
      min,
      max,
      nextDouble(min, -1),
      nextDouble(max, 1),
      min - 1,
      max + 1,
    ]),
    255,
    65535,
    4294967295,
    1e300,
  ]),
];

/** Values aimed at the rules: each bound just inside and past, wrong types, the enums. */
const EDGE_VALUES: Json[] = [
  ...limits
    .flatMap((n) => [n, n + 1])
    .filter((n) => n < 2000)
    .map((n) => 'a'.repeat(n)),
  ...limits.flatMap((n) => [n, n + 1]),
  ...READING_EDGES,
  '',
  'A',
  '0',
  'zz',
  '80E01801',
  '12345678901234567',
  'up',
  'down',
  'UP',
  '910B',
  '310P',
  'nvidia',
  'hdc.health/v1',
  'Node-1',
  'node-',
  'a.b',
  '2026-02-29T00:00:00Z',
  '2028-02-29T00:00:00Z',
  '2026-01-01T00:00:00',
  '2026-01-01 00:00:00Z',
  '1969-12-31T23:59:59Z',
  '9999-01-01T00:00:00Z',
  '1970-01-01T00:30:00+01:00',
  0,
  1,
  2,
  -1,
  0.5,
  -0.5,
  1e308,
  -1e308,
  2 ** 53,
  2 ** 53 - 1,
  true,
  false,
  null,
  [],
  {},
  ['80E01801'],
  [{}],
  { ok: true, consecutive_failures: 0 },
  { ok: false, consecutive_failures: 0 },
  { xid: 79 },
];

const probe: fc.Arbitrary<Json> = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>,
  fc.constantFrom(...EDGE_VALUES),
);

/** Where a mutation lands: every key and index of `value`, as a path. */
function pathsOf(value: Json, at: (string | number)[] = []): (string | number)[][] {
  const paths = [at];
  if (Array.isArray(value)) value.forEach((item, i) => paths.push(...pathsOf(item, [...at, i])));
  else if (value !== null && typeof value === 'object')
    for (const [key, item] of Object.entries(value)) paths.push(...pathsOf(item, [...at, key]));
  return paths;
}

type Mutation =
  | { kind: 'set'; value: Json }
  | { kind: 'delete' }
  | { kind: 'add'; key: string; value: Json }
  | { kind: 'grow'; length: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  probe.map((value) => ({ kind: 'set' as const, value })),
  fc.constant({ kind: 'delete' as const }),
  fc
    .tuple(
      fc.oneof(
        fc.string({ maxLength: 6 }),
        fc.constantFrom('readable', 'phy_id', 'canary', 'node_problems', 'device_holders'),
      ),
      probe,
    )
    .map(([key, value]) => ({ kind: 'add' as const, key, value })),
  fc.constantFrom(...ARRAY_LENGTHS).map((length) => ({ kind: 'grow' as const, length })),
);

/** The value under `key` of `node`. */
function at(node: Json, key: string | number): Json {
  return (node as Record<string | number, Json>)[key] as Json;
}

/** `value` with `change` applied at `path` (a copy). */
function mutate(value: Json, path: (string | number)[], change: Mutation): Json {
  const copy = structuredClone(value);
  if (path.length === 0) return change.kind === 'set' ? change.value : copy;
  const parent = path.slice(0, -1).reduce<Json>(at, copy);
  const key = path[path.length - 1] as string | number;
  const container = parent as Record<string | number, Json>;
  const target = container[key] as Json;
  if (change.kind === 'set') container[key] = change.value;
  else if (change.kind === 'delete') {
    if (Array.isArray(parent)) parent.splice(key as number, 1);
    else delete container[key];
  } else if (change.kind === 'add') {
    if (target !== null && typeof target === 'object' && !Array.isArray(target))
      target[change.key] = change.value;
  } else if (Array.isArray(target) && target.length > 0) {
    container[key] = Array.from({ length: change.length }, (_, i) => target[i % target.length] as Json);
  }
  return copy;
}

/** One snapshot of each family with every optional key present, so every field can be hit. */
function fullSnapshots(): Json[] {
  const at = '2026-01-01T00:00:00Z';
  const envelope = { schema: 'hdc.health/v1', node: 'node-1', boot_id: 'b', seq: 1, collected_at: at };
  const canary = { ok: false, consecutive_failures: 2, at };
  const node_problems = [{ reason: 'nic-link-down', message: 'eth2: carrier down' }];
  const device_holders = [
    { resource_id: 'Ascend910-0', pods: [{ namespace: 'team-a', name: 'train-0', container: 'main' }] },
  ];
  const common = { error_codes: ['80E01801'], present: true, readable: true };
  return [
    {
      ...envelope,
      collector: 'npu-smi',
      cached: false,
      stale_readings: true,
      payload: {
        family: '910B',
        driver_version: '24.1',
        npus: [
          {
            npu: 0,
            chip: 0,
            phy_id: 0,
            name: '910B3',
            health: 'OK',
            temp_c: 40,
            power_w: 90,
            aicore_pct: 10,
            hbm: { used_mb: 1, total_mb: 2, temp_c: 40, ecc: { single_bit: 0, double_bit: 0 } },
            pcie: { bus_id: '0000:c1:00.0', link: 'up' },
            ...common,
          },
        ],
        canary,
        node_problems,
        device_holders,
      },
    },
    {
      ...envelope,
      collector: 'npu-smi',
      cached: true,
      payload: {
        family: '310P',
        driver_version: '23.0',
        cards: [
          {
            card: 0,
            name: '310P3',
            bus_id: '0000:01:00.0',
            pcie_link: 1,
            mcu_power_w: 50,
            chips: [
              {
                chip: 0,
                device_id: 0,
                health: 'OK',
                temperature: 50,
                power_w: 20,
                ddr: { used_mb: 1, total_mb: 2, ecc_sbe: 0, ecc_dbe: 0 },
                ...common,
              },
            ],
          },
        ],
        canary,
        node_problems,
        device_holders,
      },
    },
    {
      ...envelope,
      collector: 'nvidia-smi',
      cached: false,
      payload: {
        family: 'nvidia',
        driver_version: '550.54',
        gpus: [
          {
            index: 0,
            uuid: 'GPU-0',
            bus_id: '00000000:18:00.0',
            name: 'H100',
            temperature_gpu: 40,
            power_draw_w: 300,
            ecc_corrected_volatile: 0,
            ecc_uncorrected_volatile: 0,
            pcie_link_gen: 5,
            pcie_link_width: 16,
            xid_events: [{ xid: 79, at }],
            present: true,
            readable: false,
          },
        ],
        canary,
        node_problems,
        device_holders,
      },
    },
  ];
}

/** Every key path the schema defines (`payload.npus[].hbm.ecc.single_bit`), read from its shapes. */
function schemaPaths(schema: z.core.$ZodType, prefix = '', into = new Set<string>()): Set<string> {
  const def = schema._zod.def as unknown as {
    type: string;
    innerType?: z.core.$ZodType;
    element?: z.core.$ZodType;
    options?: z.core.$ZodType[];
    shape?: Record<string, z.core.$ZodType>;
  };
  if (def.innerType) schemaPaths(def.innerType, prefix, into);
  else if (def.type === 'array' && def.element) schemaPaths(def.element, `${prefix}[]`, into);
  else if (def.type === 'union') for (const option of def.options ?? []) schemaPaths(option, prefix, into);
  else if (def.type === 'object')
    for (const [key, child] of Object.entries(def.shape ?? {})) {
      const path = prefix === '' ? key : `${prefix}.${key}`;
      into.add(path);
      schemaPaths(child, path, into);
    }
  return into;
}

/** Every key path of a JSON value, in schemaPaths' notation. */
function valuePaths(value: Json, prefix = '', into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const item of value) valuePaths(item, `${prefix}[]`, into);
  else if (value !== null && typeof value === 'object')
    for (const [key, child] of Object.entries(value)) {
      const path = prefix === '' ? key : `${prefix}.${key}`;
      into.add(path);
      valuePaths(child, path, into);
    }
  return into;
}

describe('fastParseSnapshot', () => {
  it.each(['snapshot-910b.json', 'snapshot-310p.json', 'snapshot-nvidia.json'])(
    'gives what the schema gives for the example %s',
    (name) => {
      expect(agrees(readExampleJson(name))).toBe('accepted');
    },
  );

  it('gives what the schema gives for the test builders’ snapshots', () => {
    expect(agrees(gpuSnapshot({ xids: [79, 48] }))).toBe('accepted');
  });

  it('gives what the schema gives for generated valid snapshots of every family', () => {
    fc.assert(
      fc.property(validSnapshot, (snapshot) => {
        expect(agrees(snapshot)).toBe('accepted');
      }),
      { numRuns: 500 },
    );
  });

  it('refuses exactly what the schema refuses, and otherwise gives what it gives, on mutated snapshots', () => {
    const outcomes = { accepted: 0, refused: 0 };
    fc.assert(
      fc.property(validSnapshot, fc.nat(), mutation, (snapshot, pick, change) => {
        const paths = pathsOf(snapshot);
        const mutated = mutate(snapshot, paths[pick % paths.length] ?? [], change);
        outcomes[agrees(JSON.parse(JSON.stringify(mutated)) as Json)]++;
      }),
      { numRuns: 3000 },
    );
    // Both ways are exercised, so neither comparison holds vacuously.
    expect(outcomes.accepted).toBeGreaterThan(300);
    expect(outcomes.refused).toBeGreaterThan(300);
  });

  // A field added to the schema (an optional one too, which the fast path would otherwise
  // drop unseen) must be in the full snapshots, so the tests below reach it.
  it('has every key the schema defines in its full snapshots', () => {
    const present = new Set<string>();
    for (const snapshot of fullSnapshots()) valuePaths(snapshot, '', present);
    const missing = [...schemaPaths(snapshotSchema)].filter((path) => !present.has(path));
    expect(missing).toEqual([]);
    expect(present.size).toBeGreaterThan(60);
  });

  it('agrees with the schema on every field set to every edge value, left out, or grown past its bound', () => {
    const outcomes = { accepted: 0, refused: 0 };
    for (const snapshot of fullSnapshots()) {
      expect(agrees(snapshot)).toBe('accepted');
      for (const path of pathsOf(snapshot)) {
        for (const value of EDGE_VALUES) outcomes[agrees(mutate(snapshot, path, { kind: 'set', value }))]++;
        outcomes[agrees(mutate(snapshot, path, { kind: 'delete' }))]++;
        for (const length of ARRAY_LENGTHS)
          outcomes[agrees(mutate(snapshot, path, { kind: 'grow', length }))]++;
      }
    }
    expect(outcomes.accepted).toBeGreaterThan(1000);
    expect(outcomes.refused).toBeGreaterThan(1000);
  });

  it('agrees with the schema on numbers JSON cannot carry (NaN, ±Infinity) in every numeric field', () => {
    for (const snapshot of fullSnapshots())
      for (const path of pathsOf(snapshot).filter((p) => typeof p.reduce<Json>(at, snapshot) === 'number'))
        for (const value of [NaN, Infinity, -Infinity])
          expect(agrees(mutate(snapshot, path, { kind: 'set', value: value as Json }))).toBe('refused');
  });

  it('is undefined for what is not an object', () => {
    for (const value of [null, 1, 'x', [], undefined]) expect(fastParseSnapshot(value)).toBeUndefined();
  });
});

describe('fastParseSnapshotBatch', () => {
  const one = gpuSnapshot();
  it.each([
    ['one', { snapshots: [one] }],
    ['three', { snapshots: [one, gpuSnapshot({ seq: 2 }), gpuSnapshot({ node: 'b' })] }],
    ['the most', { snapshots: Array.from({ length: 4 }, () => one) }],
    ['an unknown key beside', { snapshots: [one], extra: 1 }],
    ['none', { snapshots: [] }],
    ['too many', { snapshots: Array.from({ length: 5 }, () => one) }],
    ['not an array', { snapshots: one }],
    ['one invalid among valid', { snapshots: [one, { ...one, seq: -1 }] }],
    ['no snapshots key', { snapshot: [one] }],
    ['an array body', [one]],
  ])('agrees with the batch schema on %s', (_name, body) => {
    const slow = snapshotBatchSchema(4).safeParse(body);
    const fast = fastParseSnapshotBatch(body, 4);
    if (slow.success) expect(fast).toStrictEqual(slow.data.snapshots);
    else expect(fast).toBeUndefined();
  });
});

describe('fastParseObservationsRequest', () => {
  const one = { snapshot: gpuSnapshot() };
  it.each([
    ['one', { observations: [one] }],
    [
      'three, with unknown keys',
      { observations: [one, { snapshot: gpuSnapshot({ seq: 2 }), note: 1 }, one], x: 1 },
    ],
    ['the most', { observations: Array.from({ length: 4 }, () => one) }],
    ['none', { observations: [] }],
    ['too many', { observations: Array.from({ length: 5 }, () => one) }],
    ['an observation without its snapshot', { observations: [one, {}] }],
    ['a bare snapshot in place of an observation', { observations: [gpuSnapshot()] }],
    ['one invalid among valid', { observations: [one, { snapshot: { ...gpuSnapshot(), node: '' } }] }],
    ['not an array', { observations: one }],
    ['no observations key', { snapshots: [one] }],
  ])('agrees with the request schema on %s', (_name, body) => {
    const slow = observationsRequestSchema(4).safeParse(body);
    const fast = fastParseObservationsRequest(body, 4);
    if (slow.success) {
      expect(fast).toStrictEqual(slow.data);
      expect(JSON.stringify(fast)).toBe(JSON.stringify(slow.data));
    } else expect(fast).toBeUndefined();
  });
});
