import { describe, expect, it } from '@jest/globals';
import { DEFAULT_RULES, snapshotEnvelope, type Snapshot } from '../contracts/index.js';
import { createEngine } from '../core/engine/index.js';
import { FAMILY_LIST, defineFamilies } from '../families/index.js';
import { Registry } from '../platform/index.js';
import { toy } from '../test/families/toy/index.js';
import { createControllerMetrics } from './metrics.js';

describe('npu_fault_controller_devices', () => {
  it('labels each device with the family whose payload listed it, a family added by one registry line too', async () => {
    const families = defineFamilies([...FAMILY_LIST, toy]);
    const engine = createEngine(DEFAULT_RULES, { families });
    const T0 = Date.parse('2026-11-29T08:00:00.000Z');
    for (const t of [0, 1, 2]) {
      const snapshot = snapshotEnvelope(families.payloadSchema).parse({
        schema: 'hdc.health/v1',
        node: 'toy-node-1',
        seq: t + 1,
        collected_at: new Date(T0 + t * 1000).toISOString(),
        collector: 'hdc',
        payload: {
          family: 'toy',
          chips: [
            { slot: 0, link: 'up' },
            { slot: 1, link: 'down' },
          ],
        },
      });
      engine.observe(snapshot as unknown as Snapshot, T0 + t * 1000 + 50);
    }
    const registry = new Registry();
    createControllerMetrics(registry, { census: () => engine.census(), lastDocument: () => undefined });
    const exposition = await registry.metrics();
    expect(exposition).toMatch(/npu_fault_controller_devices\{status="failed",family="toy"\} 1\b/);
    expect(exposition).toMatch(/npu_fault_controller_devices\{status="healthy",family="toy"\} 1\b/);
  });
});

describe('the census gauges', () => {
  it('take one census per scrape, and a fresh one at the next scrape', async () => {
    let taken = 0;
    let unobserved = 3;
    const registry = new Registry();
    createControllerMetrics(registry, {
      census: () => {
        taken++;
        return { devices: [], nodes: 2, stale: 1, unobserved };
      },
      lastDocument: () => undefined,
    });
    expect(await registry.metrics()).toMatch(/npu_fault_controller_unobserved_nodes 3\b/);
    expect(taken).toBe(1);
    await new Promise((resolve) => setImmediate(resolve));
    unobserved = 5;
    expect(await registry.metrics()).toMatch(/npu_fault_controller_unobserved_nodes 5\b/);
    expect(taken).toBe(2);
  });
});
