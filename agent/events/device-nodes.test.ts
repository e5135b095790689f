import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock, Registry } from '../../platform/index.js';
import { createDeviceNodeWatcher } from './device-nodes.js';
import { EventRecorder, LogRecorder } from './testing.js';

const PATTERN = /^(davinci\d+|nvidia\d+)$/g;

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'npu-fault-dev-'));
});
afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

/** A running watcher on `dir`; `stop` aborts it and waits for it to end. */
function watchDir(dir: string) {
  const clock = new FakeClock();
  const recorder = new EventRecorder();
  const logs = new LogRecorder();
  const registry = new Registry();
  const controller = new AbortController();
  const source = createDeviceNodeWatcher(
    { dir, pattern: PATTERN, retry: { initialMs: 1000, maxMs: 1000 } },
    { onEvent: recorder.onEvent, log: logs.log, registry, clock },
  );
  const running = source.start(controller.signal);
  return {
    source,
    clock,
    recorder,
    logs,
    registry,
    stop: async (): Promise<void> => {
      controller.abort();
      await running;
    },
  };
}

async function counter(registry: Registry, name: string): Promise<number> {
  const metric = registry.getSingleMetric(`npu_fault_agent_${name}`);
  return metric ? ((await metric.get()).values[0]?.value ?? 0) : 0;
}

describe('createDeviceNodeWatcher', () => {
  it('reports a watched node that disappears, by name, and no other file', async () => {
    for (const name of ['davinci0', 'davinci1', 'nvidia0', 'nvidiactl', 'davinci_manager', 'tty0'])
      writeFileSync(join(root, name), '');
    const w = watchDir(root);
    await w.logs.waitFor('device nodes listed');
    unlinkSync(join(root, 'nvidiactl'));
    unlinkSync(join(root, 'tty0'));
    unlinkSync(join(root, 'davinci1'));
    const [event] = await w.recorder.next(1);
    expect(event).toEqual({ kind: 'removed', busId: null, at: '2026-01-01T00:00:00.000Z', line: 'davinci1' });
    expect(w.source.name).toBe('device-nodes');
    // A later removal is reported on its own: nothing else was queued before it.
    renameSync(join(root, 'nvidia0'), join(root, 'nvidia0.gone'));
    const events = await w.recorder.next(2);
    expect(events.map((e) => e.line)).toEqual(['davinci1', 'nvidia0']);
    expect(await counter(w.registry, 'device_node_removals_total')).toBe(2);
    await w.stop();
  });

  it('reports a node that comes back and goes again each time', async () => {
    writeFileSync(join(root, 'davinci3'), '');
    const w = watchDir(root);
    await w.logs.waitFor('device nodes listed');
    unlinkSync(join(root, 'davinci3'));
    await w.recorder.next(1);
    writeFileSync(join(root, 'davinci3'), '');
    // Listed again with the node back in it.
    await w.logs.until(() => w.logs.messages('device nodes listed').at(-1)?.nodes === 1);
    unlinkSync(join(root, 'davinci3'));
    expect((await w.recorder.next(2)).map((e) => e.line)).toEqual(['davinci3', 'davinci3']);
    await w.stop();
  });

  it('does not report nodes missing before it started', async () => {
    writeFileSync(join(root, 'davinci0'), '');
    const w = watchDir(root);
    await w.logs.waitFor('device nodes listed');
    writeFileSync(join(root, 'other'), '');
    await w.logs.waitFor('device nodes listed', 2);
    await w.stop();
    expect(w.recorder.events).toEqual([]);
  });

  it('retries a missing directory, and watches it once it exists', async () => {
    const dir = join(root, 'dev');
    const w = watchDir(dir);
    await w.logs.waitFor('cannot watch device nodes; retrying');
    expect(await counter(w.registry, 'device_node_watch_errors_total')).toBe(1);
    mkdirSync(dir);
    writeFileSync(join(dir, 'nvidia7'), '');
    await w.clock.advance(1000);
    await w.logs.waitFor('device nodes listed');
    unlinkSync(join(dir, 'nvidia7'));
    expect((await w.recorder.next(1)).map((e) => e.line)).toEqual(['nvidia7']);
    await w.stop();
  });
});
