import { describe, expect, it } from '@jest/globals';
import { snapshotSchema } from './index.js';
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
});
