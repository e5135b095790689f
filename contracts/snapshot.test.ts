import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import type { z } from 'zod';
import {
  PRINTABLE_TEXT_PATTERN,
  READING_BOUNDS,
  READING_FIELDS,
  card310Schema,
  chip310Schema,
  fastParseSnapshot,
  gpuSchema,
  isPrintableText,
  npu910Schema,
  snapshotSchema,
  type ReadingField,
} from './index.js';
import { readExampleJson } from '../test/fixtures.js';

const fixture = readExampleJson;

describe('snapshot contract', () => {
  it.each(['snapshot-910b.json', 'snapshot-310p.json', 'snapshot-nvidia.json'])('accepts %s', (name) => {
    const parsed = snapshotSchema.parse(fixture(name));
    expect(parsed.schema).toBe('hdc.health/v1');
    expect(parsed.cached).toBe(false);
  });

  it('rejects a wrong schema id, naming the field', () => {
    const result = snapshotSchema.safeParse({
      ...(fixture('snapshot-910b.json') as object),
      schema: 'hdc.health/v2',
    });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path).toEqual(['schema']);
  });

  it('rejects an unknown payload family', () => {
    const base = fixture('snapshot-910b.json') as Record<string, unknown>;
    const result = snapshotSchema.safeParse({ ...base, payload: { family: '950', npus: [] } });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path).toEqual(['payload', 'family']);
  });

  it.each(['9999-12-31T23:59:59.999-23:59', '1969-12-31T23:59:59Z'])(
    'rejects collected_at %s, out of range',
    (at) => {
      const result = snapshotSchema.safeParse({
        ...(fixture('snapshot-910b.json') as object),
        collected_at: at,
      });
      expect(result.success).toBe(false);
      expect(result.error?.issues[0]?.path).toEqual(['collected_at']);
    },
  );

  describe('readable (a device the tool lists but cannot read)', () => {
    const withDevice = (payload: Record<string, unknown>): unknown => ({
      schema: 'hdc.health/v1',
      node: 'n1',
      seq: 1,
      collected_at: '2026-11-29T08:00:00Z',
      collector: 'sim',
      payload,
    });
    // The field only when given: an older agent's payload has no such key at all.
    const flag = (readable: unknown): object => (readable === undefined ? {} : { readable });
    const payloads = {
      nvidia: (readable?: unknown) => ({ family: 'nvidia', gpus: [{ index: 0, ...flag(readable) }] }),
      '910B': (readable?: unknown) => ({ family: '910B', npus: [{ npu: 0, ...flag(readable) }] }),
      '310P': (readable?: unknown) => ({
        family: '310P',
        cards: [{ card: 0, chips: [{ chip: 0, device_id: 0, ...flag(readable) }] }],
      }),
    };
    const device = (
      snapshot: ReturnType<typeof snapshotSchema.parse>,
    ): { readable?: boolean } | undefined => {
      const p = snapshot.payload;
      return p.family === 'nvidia' ? p.gpus[0] : p.family === '910B' ? p.npus[0] : p.cards[0]?.chips[0];
    };

    it.each(Object.keys(payloads) as (keyof typeof payloads)[])(
      '%s: round-trips false and true',
      (family) => {
        for (const readable of [false, true]) {
          const parsed = snapshotSchema.parse(withDevice(payloads[family](readable)));
          expect(device(parsed)?.readable).toBe(readable);
          expect(device(snapshotSchema.parse(JSON.parse(JSON.stringify(parsed))))?.readable).toBe(readable);
        }
      },
    );

    it.each(Object.keys(payloads) as (keyof typeof payloads)[])(
      '%s: an older payload without the field validates and gains no field',
      (family) => {
        const parsed = snapshotSchema.parse(withDevice(payloads[family]()));
        expect(device(parsed)).not.toHaveProperty('readable');
      },
    );

    it('names the field when it is not a boolean', () => {
      const result = snapshotSchema.safeParse(withDevice(payloads.nvidia('no')));
      expect(result.error?.issues[0]?.path).toEqual(['payload', 'gpus', 0, 'readable']);
    });

    it('leaves the example snapshots as they were (none carries the field)', () => {
      for (const name of ['snapshot-910b.json', 'snapshot-310p.json', 'snapshot-nvidia.json']) {
        expect(JSON.stringify(snapshotSchema.parse(fixture(name)))).not.toContain('readable');
      }
    });
  });

  describe('canary (the node agent inference canary)', () => {
    const base = fixture('snapshot-nvidia.json') as { payload: Record<string, unknown> };
    const withCanary = (canary: unknown): unknown => ({ ...base, payload: { ...base.payload, canary } });

    it('round-trips a failing canary and fills a left-out time with null', () => {
      const canary = { ok: false, consecutive_failures: 2, at: '2026-11-29T08:00:00.500Z' };
      expect(snapshotSchema.parse(withCanary(canary)).payload.canary).toEqual(canary);
      expect(snapshotSchema.parse(withCanary({ ok: true, consecutive_failures: 0 })).payload.canary).toEqual({
        ok: true,
        consecutive_failures: 0,
        at: null,
      });
      expect(snapshotSchema.parse(base).payload).not.toHaveProperty('canary');
    });

    it.each([
      [{ ok: true, consecutive_failures: 1 }, ['consecutive_failures']],
      [{ ok: false, consecutive_failures: 0 }, ['consecutive_failures']],
      [{ ok: false, consecutive_failures: -1 }, ['consecutive_failures']],
      [{ ok: false, consecutive_failures: 1, at: 'yesterday' }, ['at']],
      [{ consecutive_failures: 1 }, ['ok']],
    ])('refuses %j, naming the field', (canary, field) => {
      const result = snapshotSchema.safeParse(withCanary(canary));
      expect(result.error?.issues[0]?.path).toEqual(['payload', 'canary', ...field]);
    });
  });

  it('reads a missing metric as null and keeps explicit nulls', () => {
    const parsed = snapshotSchema.parse({
      schema: 'hdc.health/v1',
      node: 'n1',
      seq: 1,
      collected_at: '2026-11-29T08:00:00Z',
      collector: 'sim',
      payload: { family: 'nvidia', gpus: [{ index: 0, temperature_gpu: null }] },
    });
    const gpu = parsed.payload.family === 'nvidia' ? parsed.payload.gpus[0] : undefined;
    expect(gpu?.temperature_gpu).toBeNull();
    expect(gpu?.power_draw_w).toBeNull();
    expect(gpu?.present).toBe(true);
  });

  describe('reading bounds (what hardware can report)', () => {
    /** The example snapshot of `name` with `value` at `path` (a copy). */
    const withValue = (name: string, path: readonly (string | number)[], value: unknown): unknown => {
      const copy = structuredClone(fixture(name)) as Record<string | number, unknown>;
      let holder = copy;
      for (const key of path.slice(0, -1)) holder = holder[key] as Record<string | number, unknown>;
      holder[path[path.length - 1] as string | number] = value;
      return copy;
    };
    const gpuFields = gpuSchema.shape;
    /** Where each bounded field sits in an example snapshot (one device of its family). */
    const where = (field: ReadingField): { name: string; path: (string | number)[] } => {
      const keys = field.split('.');
      if (field in gpuFields) return { name: 'snapshot-nvidia.json', path: ['payload', 'gpus', 0, ...keys] };
      if (field === 'mcu_power_w')
        return { name: 'snapshot-310p.json', path: ['payload', 'cards', 0, field] };
      if (field === 'temperature' || field.startsWith('ddr.'))
        return { name: 'snapshot-310p.json', path: ['payload', 'cards', 0, 'chips', 0, ...keys] };
      return { name: 'snapshot-910b.json', path: ['payload', 'npus', 0, ...keys] };
    };
    /** The nearest double past `x`, above (1) or below (-1). */
    const nextDouble = (x: number, direction: 1 | -1): number => {
      if (x === 0) return direction * Number.MIN_VALUE;
      const view = new DataView(new ArrayBuffer(8));
      view.setFloat64(0, x);
      view.setBigInt64(0, view.getBigInt64(0) + (x > 0 === direction > 0 ? 1n : -1n));
      return view.getFloat64(0);
    };
    const fields = Object.keys(READING_FIELDS) as ReadingField[];

    it.each(fields)(
      '%s: each bound is accepted, the nearest number past it refused naming the field',
      (field) => {
        const { min, max } = READING_BOUNDS[READING_FIELDS[field]];
        const { name, path } = where(field);
        for (const value of [min, max, null]) {
          const snapshot = withValue(name, path, value);
          expect(snapshotSchema.safeParse(snapshot).success).toBe(true);
          expect(fastParseSnapshot(snapshot)).toEqual(snapshotSchema.parse(snapshot));
        }
        for (const value of [nextDouble(min, -1), nextDouble(max, 1), 1e300, -1e300]) {
          const snapshot = withValue(name, path, value);
          const result = snapshotSchema.safeParse(snapshot);
          expect(result.error?.issues[0]?.path).toEqual(path);
          expect(result.error?.issues[0]?.message).toMatch(/is outside what hardware can report/);
          expect(fastParseSnapshot(snapshot)).toBeUndefined();
        }
      },
    );

    it('refuses a GPU at 1e300 °C (issue 26), naming the field, the value and the bounds', () => {
      const result = snapshotSchema.safeParse(
        withValue('snapshot-nvidia.json', ['payload', 'gpus', 0, 'temperature_gpu'], 1e300),
      );
      expect(result.error?.issues).toEqual([
        expect.objectContaining({
          path: ['payload', 'gpus', 0, 'temperature_gpu'],
          message: '1e+300 is outside what hardware can report (-55 to 200 °C)',
        }),
      ]);
    });

    it('accepts a device in real trouble: 120 °C, a kilowatt and a half', () => {
      const hot = withValue('snapshot-nvidia.json', ['payload', 'gpus', 0, 'temperature_gpu'], 120);
      const parsed = snapshotSchema.parse(hot);
      expect(parsed.payload.family === 'nvidia' && parsed.payload.gpus[0]?.temperature_gpu).toBe(120);
      const power = withValue('snapshot-910b.json', ['payload', 'npus', 0, 'power_w'], 1500);
      expect(snapshotSchema.safeParse(power).success).toBe(true);
    });

    it.each([
      [READING_BOUNDS.xid.max, true],
      [READING_BOUNDS.xid.max + 1, false],
      [65535, false],
      [79.5, false],
    ])('xid %d: accepted %s', (xid, accepted) => {
      const snapshot = withValue('snapshot-nvidia.json', ['payload', 'gpus', 0, 'xid_events'], [{ xid }]);
      const result = snapshotSchema.safeParse(snapshot);
      expect(result.success).toBe(accepted);
      if (!accepted) {
        expect(result.error?.issues[0]?.path).toEqual(['payload', 'gpus', 0, 'xid_events', 0, 'xid']);
        expect(fastParseSnapshot(snapshot)).toBeUndefined();
      }
    });

    // The table, the schema and the fast path read the same numbers: every numeric field of
    // a device but its identifiers is a bounded reading, with the bounds of its kind.
    it('bounds every numeric metric of every device with READING_BOUNDS', () => {
      const identifiers = new Set(['npu', 'chip', 'phy_id', 'card', 'device_id', 'index']);
      const found = new Map<string, { min: number | null; max: number | null }>();
      const walk = (schema: z.core.$ZodType, path: string): void => {
        const def = schema._zod.def as unknown as {
          type: string;
          innerType?: z.core.$ZodType;
          shape?: Record<string, z.core.$ZodType>;
        };
        if (def.innerType) walk(def.innerType, path);
        else if (def.type === 'object')
          for (const [key, child] of Object.entries(def.shape ?? {}))
            walk(child, path === '' ? key : `${path}.${key}`);
        else if (def.type === 'number' && !identifiers.has(path)) {
          const number = schema as unknown as { minValue: number | null; maxValue: number | null };
          found.set(path, { min: number.minValue, max: number.maxValue });
        }
      };
      for (const device of [npu910Schema, chip310Schema, card310Schema, gpuSchema]) walk(device, '');
      const expected = fields.map((field) => {
        const { min, max } = READING_BOUNDS[READING_FIELDS[field]];
        return [field, { min, max }] as const;
      });
      expect(Object.fromEntries(found)).toEqual(Object.fromEntries(expected));
    });
  });
});

describe('printable text', () => {
  const gpuInput = (gpu: Record<string, unknown>): unknown => ({
    schema: 'hdc.health/v1',
    node: 'gpu-1',
    seq: 1,
    collected_at: '2026-12-01T00:00:00Z',
    collector: 'nvidia-smi',
    payload: { family: 'nvidia', gpus: [{ index: 0, ...gpu }] },
  });

  it.each([
    ['an escape sequence in a name', { name: 'H100\u001b[2J' }, 'payload.gpus.0.name'],
    ['a newline in a uuid', { uuid: 'GPU-1\nGPU-2' }, 'payload.gpus.0.uuid'],
    ['a lone surrogate in a uuid', { uuid: 'GPU-\ud800' }, 'payload.gpus.0.uuid'],
    ['a C1 control in a bus id', { bus_id: '0000:3b:00.0\u0085' }, 'payload.gpus.0.bus_id'],
  ])('refuses %s, naming the field; the fast path does not take it either', (_, gpu, path) => {
    const input = gpuInput(gpu);
    const result = snapshotSchema.safeParse(input);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path.join('.')).toBe(path);
    expect(result.error?.issues[0]?.message).toBe('must be printable text (no control characters)');
    expect(fastParseSnapshot(input)).toBeUndefined();
  });

  it('accepts printable text of any script, astral characters included', () => {
    expect(snapshotSchema.safeParse(gpuInput({ name: 'NVIDIA H100 “SXM” 加速卡 🚀' })).success).toBe(true);
  });

  it('isPrintableText agrees with PRINTABLE_TEXT_PATTERN on any string', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (text) => {
        expect(isPrintableText(text)).toBe(PRINTABLE_TEXT_PATTERN.test(text));
      }),
      { numRuns: 2000 },
    );
    for (const text of ['\ud800', '\udc00', '\ud800\udc00', 'a\udc00\ud800', '\u007f', '\u009f', '\u00a0'])
      expect(isPrintableText(text)).toBe(PRINTABLE_TEXT_PATTERN.test(text));
  });
});

describe('device_holders (CONTRACT §1.9)', () => {
  const base = fixture('snapshot-nvidia.json') as { payload: Record<string, unknown> } & Record<
    string,
    unknown
  >;
  const withHolders = (holders: unknown): unknown => ({
    ...base,
    payload: { ...base.payload, device_holders: holders },
  });
  const pod = { namespace: 'team-a', name: 'train-0', container: 'main' };

  it('is left out when absent and kept empty when known to be empty', () => {
    expect(snapshotSchema.parse(base).payload.device_holders).toBeUndefined();
    expect(snapshotSchema.parse(withHolders([])).payload.device_holders).toEqual([]);
    const parsed = snapshotSchema.parse(withHolders([{ resource_id: 'GPU-1', pods: [pod] }]));
    expect(parsed.payload.device_holders).toEqual([{ resource_id: 'GPU-1', pods: [pod] }]);
    expect(fastParseSnapshot(withHolders([{ resource_id: 'GPU-1', pods: [pod] }]))).toEqual(parsed);
  });

  it.each([
    ['namespace', { ...pod, namespace: 'Team_A' }],
    ['namespace', { ...pod, namespace: 'a'.repeat(64) }],
    ['name', { ...pod, name: 'x/../y' }],
    ['name', { ...pod, name: 'p'.repeat(254) }],
    ['container', { ...pod, container: '' }],
  ])('refuses a bad %s, naming the field', (field, bad) => {
    const result = snapshotSchema.safeParse(withHolders([{ resource_id: 'GPU-1', pods: [bad] }]));
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path).toEqual(['payload', 'device_holders', 0, 'pods', 0, field]);
    expect(fastParseSnapshot(withHolders([{ resource_id: 'GPU-1', pods: [bad] }]))).toBeUndefined();
  });

  it('refuses more than 32 pods on one device', () => {
    const pods = Array.from({ length: 33 }, (_, i) => ({ ...pod, name: `p-${i}` }));
    const result = snapshotSchema.safeParse(withHolders([{ resource_id: 'GPU-1', pods }]));
    expect(result.error?.issues[0]?.path).toEqual(['payload', 'device_holders', 0, 'pods']);
  });
});
