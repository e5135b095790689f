/**
 * What adding an accelerator family takes: one folder (test/families/toy/, a toy family no
 * product code knows) and one registry line (below), through the registry API the product's
 * FAMILIES is built with. Its snapshots are then validated, normalised into observations of
 * family `toy`, evaluated by the engine and counted under their own family.
 */
import { describe, expect, it } from '@jest/globals';
import {
  DEFAULT_RULES,
  deviceObservationSchema,
  snapshotEnvelope,
  snapshotSchema,
  type Snapshot,
} from '../contracts/index.js';
import { createEngine } from '../core/engine/index.js';
import { devicesIn, normalise } from '../core/normalise.js';
import { toy } from '../test/families/toy/index.js';
import { FAMILY_LIST, defineFamilies } from './index.js';

/** The product's families and the toy: the one registry line a new family needs. */
const WITH_TOY = defineFamilies([...FAMILY_LIST, toy]);
const toySnapshotSchema = snapshotEnvelope(WITH_TOY.payloadSchema);

const T0 = Date.parse('2026-11-29T08:00:00.000Z');

/** A toy board's snapshot at second `t`: two chips, chip 1's link `link`. */
function toySnapshot(t: number, link: 'up' | 'down'): unknown {
  return {
    schema: 'hdc.health/v1',
    node: 'toy-node-1',
    boot_id: 'b1',
    seq: t + 1,
    collected_at: new Date(T0 + t * 1000).toISOString(),
    collector: 'hdc',
    payload: {
      family: 'toy',
      chips: [
        { slot: 0, toy_temp_c: 41, toy_power_w: 20, link: 'up' },
        { slot: 1, toy_temp_c: 42, toy_power_w: 20, link },
      ],
    },
  };
}

describe('a family added as one folder and one registry line', () => {
  it('is validated by the envelope around the registry’s payload union, and the product’s refuses it', () => {
    const parsed = toySnapshotSchema.parse(toySnapshot(0, 'up'));
    expect(parsed.payload).toEqual({
      family: 'toy',
      chips: [
        { slot: 0, toy_temp_c: 41, toy_power_w: 20, link: 'up', error_codes: [], present: true },
        { slot: 1, toy_temp_c: 42, toy_power_w: 20, link: 'up', error_codes: [], present: true },
      ],
    });
    expect(
      toySnapshotSchema.safeParse({ ...parsed, payload: { family: 'toy', chips: [{ slot: -1 }] } }).success,
    ).toBe(false);
    const product = snapshotSchema.safeParse(toySnapshot(0, 'up'));
    expect(product.error?.issues[0]?.path).toEqual(['payload', 'family']);
    // The product's own families still validate through the registry with the toy in it.
    expect(WITH_TOY.ids).toEqual(['910B', '310P', 'nvidia', 'toy']);
  });

  it('is normalised into observations of family toy, by the toy’s own ids, keys and resources', () => {
    const snapshot = toySnapshotSchema.parse(toySnapshot(0, 'down'));
    const devices = normalise(snapshot, WITH_TOY);
    expect(devicesIn(snapshot.payload, WITH_TOY)).toBe(2);
    for (const device of devices) deviceObservationSchema.parse(device);
    expect(devices.map((d) => [d.id, d.key, d.resource_id, d.family, d.pcie_link_status])).toEqual([
      ['toy0', 'toy-board/0', 'Toy-0', 'toy', 'up'],
      ['toy1', 'toy-board/1', 'Toy-1', 'toy', 'down'],
    ]);
    expect(WITH_TOY.readingFields).toMatchObject({ toy_temp_c: 'temperature', temp_c: 'temperature' });
    expect(WITH_TOY.resourceNames).toContain('example.com/toy');
  });

  it('is evaluated by the engine and counted under its own family, beside the product’s', () => {
    const engine = createEngine(DEFAULT_RULES, { families: WITH_TOY });
    const transitions = [0, 1, 2].flatMap((t) => {
      const snapshot = toySnapshotSchema.parse(toySnapshot(t, 'down')) as unknown as Snapshot;
      const result = engine.observe(snapshot, T0 + t * 1000 + 50);
      expect(result.accepted).toBe(true);
      return result.transitions;
    });
    expect(transitions.filter((x) => x.to === 'failed').map((x) => [x.npu, x.reason])).toEqual([
      ['toy1', 'pcie-link-down'],
    ]);
    const listed = engine.document(T0 + 3000, { identity: 'a', term: 1 }).nodes['toy-node-1']?.npus;
    expect(listed?.map((d) => [d.id, d.resource_id, d.kind, d.status])).toEqual([
      ['toy1', 'Toy-1', 'npu', 'failed'],
    ]);
    // A 910B node beside it: each device counts under the family whose payload listed it.
    engine.observe(
      snapshotSchema.parse({
        ...(toySnapshot(2, 'up') as object),
        node: 'atlas-1',
        payload: { family: '910B', npus: [{ npu: 0, pcie: { bus_id: '0000:C1:00.0', link: 'up' } }] },
      }),
      T0 + 2100,
    );
    const counts = engine.census().devices.map((d) => `${d.family}/${d.status}:${d.count}`);
    expect(counts.sort()).toEqual(['910B/healthy:1', 'toy/failed:1', 'toy/healthy:1']);
  });
});
