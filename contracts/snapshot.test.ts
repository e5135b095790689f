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
