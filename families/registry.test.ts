import { describe, expect, it } from '@jest/globals';
import { snapshotSchema } from '../contracts/index.js';
import { createEngine } from '../core/engine/index.js';
import { toy } from '../test/families/toy/index.js';
import { FAMILIES, FAMILY_LIST, UNKNOWN_FAMILY, defineFamilies, type AnyFamily } from './index.js';

describe('defineFamilies', () => {
  it('lists the product’s families, their reading fields, resources and simulated kinds in registry order', () => {
    expect(FAMILIES.ids).toEqual(['910B', '310P', 'nvidia']);
    expect(FAMILIES.simKinds).toEqual(['910B', 'A3', '310P', 'nvidia']);
    expect(FAMILIES.vendors).toEqual(['huawei', 'nvidia']);
    expect(FAMILIES.deviceNodes).toEqual(['davinci', 'nvidia']);
    expect(FAMILIES.get('310P')?.kind).toBe('npu');
    expect(FAMILIES.get('950')).toBeUndefined();
  });

  it.each<[string, AnyFamily[]]>([
    ['two families of one id', [toy, toy]],
    ['a family named unknown', [{ ...toy, id: UNKNOWN_FAMILY }]],
    ['one reading field of two kinds', [toy, { ...toy, id: 'toy2', readingFields: { toy_temp_c: 'power' } }]],
    ['one simulated node kind twice', [toy, { ...toy, id: 'toy2', readingFields: {}, deviceReadings: {} }]],
  ])('refuses %s', (_, families) => {
    expect(() => defineFamilies([...FAMILY_LIST, ...families] as [AnyFamily, ...AnyFamily[]])).toThrow(
      /^families: /,
    );
  });
});

describe('a device’s family in the engine', () => {
  it('is unknown while the device is only seeded (the published document does not say), then its payload’s', () => {
    const engine = createEngine();
    const since = '2026-11-29T08:00:00.000Z';
    engine.seed(
      [
        {
          node: 'n1',
          latched: [
            {
              key: '0000:C1:00.0',
              id: 'npu0',
              // No name says a family: a 310P resource name counts as unknown, not as 310P.
              resource_id: 'Ascend310P-0',
              kind: 'npu',
              model: '310P3',
              reasons: ['ecc-uncorrectable'],
              since,
              ecc_errors: 1,
              ecc_uncorrectable: 1,
            },
          ],
        },
      ],
      Date.parse(since) + 1000,
    );
    expect(engine.census().devices).toEqual([{ family: UNKNOWN_FAMILY, status: 'failed', count: 1 }]);
    const sample = snapshotSchema.parse({
      schema: 'hdc.health/v1',
      node: 'n1',
      boot_id: 'b1',
      seq: 1,
      collected_at: '2026-11-29T08:00:02.000Z',
      collector: 'hdc',
      payload: { family: '910B', npus: [{ npu: 0, pcie: { bus_id: '0000:C1:00.0' } }] },
    });
    engine.observe(sample, Date.parse(since) + 2100);
    expect(engine.census().devices).toEqual([{ family: '910B', status: 'failed', count: 1 }]);
  });
});
