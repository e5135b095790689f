import { describe, expect, it } from '@jest/globals';
import { FakeClock } from './clock.js';
import { createHeapTrimmer, v8FullCollection } from './heap-trim.js';
import { createLogger } from './logger.js';
import { createRegistry } from './metrics.js';

const quiet = createLogger({ level: 'silent', destination: { write: () => undefined } });

describe('createHeapTrimmer', () => {
  it('runs a full collection every interval until stopped, counting each', async () => {
    const clock = new FakeClock();
    const registry = createRegistry('agent');
    let collections = 0;
    const trimmer = createHeapTrimmer(60_000, {
      clock,
      log: quiet,
      registry,
      component: 'agent',
      collect: () => void collections++,
    });
    const stop = new AbortController();
    const running = trimmer.start(stop.signal);
    await clock.advance(59_999);
    expect(collections).toBe(0);
    await clock.advance(1);
    expect(collections).toBe(1);
    await clock.advance(120_000);
    expect(collections).toBe(3);
    stop.abort();
    await running;
    await clock.advance(600_000);
    expect(collections).toBe(3);
    const metrics = await registry.getMetricsAsJSON();
    expect(metrics.find((m) => m.name === 'npu_fault_agent_heap_trims_total')?.values[0]?.value).toBe(3);
  });

  it('refuses an interval that is not positive', () => {
    const deps = {
      clock: new FakeClock(),
      log: quiet,
      registry: createRegistry('agent'),
      component: 'agent',
    };
    expect(() => createHeapTrimmer(0, deps)).toThrow('heap trim interval');
  });
});

describe('v8FullCollection', () => {
  it("gives V8's full collection without a command-line flag, and it frees unreachable objects", async () => {
    const collect = v8FullCollection();
    let garbage: object | undefined = { big: new Array(1000).fill('x') };
    const ref = new WeakRef(garbage);
    garbage = undefined;
    // WeakRef targets are kept until the end of the current job: let it end first.
    await new Promise((resolve) => setImmediate(resolve));
    collect();
    expect(ref.deref()).toBeUndefined();
    expect(garbage).toBeUndefined();
  });
});
