import { describe, expect, it } from '@jest/globals';
import { createEngine, type Transition } from '../core/engine/index.js';
import { npuSnapshot } from '../core/engine/testing.js';
import { FakeClock } from '../platform/index.js';
import { EngineHost, type TransitionCause } from './engine-host.js';

const T0 = Date.parse('2026-11-29T08:00:00.000Z');

function setup() {
  const clock = new FakeClock(T0);
  const journal: string[] = [];
  const host = new EngineHost(createEngine(), clock, { append: (line) => journal.push(line) });
  const seen: { transitions: readonly Transition[]; cause: TransitionCause }[] = [];
  host.onTransitions((transitions, cause) => seen.push({ transitions, cause }));
  return { clock, host, journal, seen };
}

describe('EngineHost', () => {
  it('observes at its clock, journals only what it accepted, and reports each result', () => {
    const { host, journal, seen } = setup();
    const first = npuSnapshot({ node: 'n1', seq: 1, t: 0 }, [{ npu: 0 }]);
    const results = host.accept([
      first,
      first,
      npuSnapshot({ node: 'n1', seq: 2, t: 1 }, [{ npu: 0, link: 'down', power: 90 }]),
    ]);
    expect(results).toEqual([
      { node: 'n1', accepted: true },
      { node: 'n1', accepted: false, dropped: 'duplicate' },
      { node: 'n1', accepted: true },
    ]);
    expect(journal.map((l) => (JSON.parse(l) as { seq: number }).seq)).toEqual([1, 2]);
    expect(seen.map((s) => [s.cause, s.transitions.map((t) => `${t.from}>${t.to}`)])).toEqual([
      ['observation', ['unknown>healthy', 'healthy>failed']],
    ]);
  });

  it('ticks overlays at its clock and reports them as such', async () => {
    const { host, clock, seen } = setup();
    host.accept([npuSnapshot({ node: 'n1', seq: 1, t: 0 }, [{ npu: 0 }])]);
    await clock.advance(5001);
    host.tick();
    expect(seen.at(-1)).toMatchObject({
      cause: 'tick',
      transitions: [{ from: 'healthy', to: 'unknown', reason: 'agent-unreachable' }],
    });
    expect(host.view('n1')).toMatchObject({ observed: true, entry: { agent: 'stale' } });
  });

  it('views a node: unobserved, healthy (no entry), failing (its entry and latches)', () => {
    const { host } = setup();
    expect(host.view('n1')).toEqual({ observed: false, entry: null, latched: [] });
    host.accept([npuSnapshot({ node: 'n1', seq: 1, t: 0 }, [{ npu: 0 }])]);
    expect(host.view('n1')).toEqual({ observed: true, entry: null, latched: [] });
    host.accept([npuSnapshot({ node: 'n1', seq: 2, t: 1 }, [{ npu: 0, sbe: 1, dbe: 1 }])]);
    const view = host.view('n1');
    expect(view.entry?.npus[0]?.reason).toBe('ecc-uncorrectable');
    expect(view.latched.map((l) => l.reasons)).toEqual([['ecc-uncorrectable']]);
    host.clear('n1', 'npu0');
    expect(host.view('n1').latched).toEqual([]);
  });

  it('forgets a removed node, which then reads as not observed', () => {
    const { host } = setup();
    host.accept([npuSnapshot({ node: 'n1', seq: 1, t: 0 }, [{ npu: 0 }])]);
    host.removeNode('n1');
    expect(host.view('n1').observed).toBe(false);
    expect(host.document({ identity: 'x', term: 1 }).node_count).toBe(0);
  });
});
