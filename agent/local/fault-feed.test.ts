import { describe, expect, it } from '@jest/globals';
import { FakeClock } from '../../platform/index.js';
import { createFaultFeed } from './fault-feed.js';

const T = Date.UTC(2026, 0, 1);
const iso = (ms: number): string => new Date(T + ms).toISOString();

function entry(status: string, readings: { temp?: number; observed?: number } = {}): object {
  return {
    node: 'gpu-1',
    observed_at: iso(readings.observed ?? 0),
    agent: 'ok',
    summary: { total: 1, healthy: 0, degraded: 0, failed: 1, unknown: 0 },
    npus: [{ id: 'gpu-0', status, reasons: ['xid-79'], temperature_c: readings.temp ?? 40, power_w: 300 }],
  };
}

describe('createFaultFeed', () => {
  it('starts with no answer: id 0, everything null, stale', () => {
    expect(createFaultFeed().current()).toEqual({
      id: 0,
      entry: null,
      leader: null,
      term: null,
      at: null,
      answeredAt: null,
      stale: true,
    });
  });

  it('the first answer is a change even when healthy; its id is the time of the change', () => {
    const feed = createFaultFeed();
    let calls = 0;
    feed.subscribe(() => calls++);
    feed.update({ entry: null, leader: 'c-0', term: 2 }, iso(1000));
    expect(feed.current()).toEqual({
      id: T + 1000,
      entry: null,
      leader: 'c-0',
      term: 2,
      at: iso(1000),
      answeredAt: iso(1000),
      stale: false,
    });
    expect(calls).toBe(1);
  });

  it('turns stale after staleAfterMs without an answer (a change), and fresh at the next answer', async () => {
    const clock = new FakeClock(T);
    const feed = createFaultFeed({ clock, staleAfterMs: 10_000 });
    let calls = 0;
    feed.subscribe(() => calls++);
    feed.update({ entry: { n: 1 }, leader: 'c-0', term: 2 }, iso(0));
    await clock.advance(5_000);
    feed.update({ entry: { n: 1 }, leader: 'c-0', term: 2 }, iso(5_000)); // unchanged: re-arms the check
    await clock.advance(9_999);
    expect(feed.current().stale).toBe(false);
    await clock.advance(1);
    expect(feed.current()).toMatchObject({ stale: true, entry: { n: 1 }, id: T + 15_000, at: iso(15_000) });
    expect(calls).toBe(2);
    await clock.advance(60_000);
    expect(calls).toBe(2); // stale once, not at every period
    feed.update({ entry: { n: 1 }, leader: 'c-0', term: 2 }, iso(80_000));
    expect(feed.current()).toMatchObject({ stale: false, id: T + 80_000 });
    expect(calls).toBe(3);
    feed.close();
    await clock.advance(60_000);
    expect(feed.current().stale).toBe(false); // closed: no timer left
  });

  it('refuses a non-positive staleAfterMs', () => {
    expect(() => createFaultFeed({ staleAfterMs: 0 })).toThrow('staleAfterMs');
  });

  it('bumps the id only when the entry changed, not for readings that move every sample', () => {
    const feed = createFaultFeed();
    let calls = 0;
    feed.subscribe(() => calls++);
    feed.update({ entry: entry('failed'), leader: 'c-0', term: 2 }, iso(1000));
    const first = feed.current().id;
    feed.update({ entry: entry('failed', { temp: 90, observed: 2 }), leader: 'c-1', term: 3 }, iso(2000));
    expect(feed.current()).toMatchObject({
      id: first,
      leader: 'c-1',
      term: 3,
      at: iso(1000),
      answeredAt: iso(2000),
    });
    expect(feed.current().entry).toEqual(entry('failed', { temp: 90, observed: 2 })); // the newest is served
    expect(calls).toBe(1);
    feed.update({ entry: entry('degraded'), leader: 'c-1', term: 3 }, iso(3000));
    expect(feed.current()).toMatchObject({ id: T + 3000, at: iso(3000) });
    feed.update({ entry: null, leader: 'c-1', term: 3 }, iso(4000));
    expect(feed.current()).toMatchObject({ id: T + 4000, entry: null });
    expect(calls).toBe(3);
  });

  it('serves no pod names (other tenants’ pods), and a change of holders alone is no change', () => {
    const feed = createFaultFeed();
    const held = (pods: string[]) => {
      const e = entry('failed') as { npus: object[] };
      return { ...e, npus: e.npus.map((d) => ({ ...d, pods })) };
    };
    feed.update({ entry: held(['team-b/train-0']), leader: 'c', term: 1 }, iso(1));
    expect(JSON.stringify(feed.current().entry)).not.toContain('team-b');
    expect(feed.current().entry).toEqual(entry('failed'));
    const id = feed.current().id;
    feed.update({ entry: held(['team-c/infer-1']), leader: 'c', term: 1 }, iso(2));
    expect(feed.current().id).toBe(id);
    expect(JSON.stringify(feed.current().entry)).not.toContain('team-c');
  });

  it('ignores key order', () => {
    const feed = createFaultFeed();
    feed.update({ entry: { a: 1, b: { c: 2, d: 3 } }, leader: 'c', term: 1 }, iso(1));
    const id = feed.current().id;
    feed.update({ entry: { b: { d: 3, c: 2 }, a: 1 }, leader: 'c', term: 1 }, iso(2));
    expect(feed.current().id).toBe(id);
  });

  it('keeps ids increasing when changes share a millisecond or the clock steps back', () => {
    const feed = createFaultFeed();
    feed.update({ entry: { n: 1 }, leader: 'c', term: 1 }, iso(5000));
    feed.update({ entry: { n: 2 }, leader: 'c', term: 1 }, iso(5000));
    feed.update({ entry: { n: 3 }, leader: 'c', term: 1 }, iso(1000));
    expect(feed.current().id).toBe(T + 5002);
  });

  it('stops calling a listener once removed', () => {
    const feed = createFaultFeed();
    let calls = 0;
    const remove = feed.subscribe(() => calls++);
    feed.update({ entry: { n: 1 }, leader: 'c', term: 1 }, iso(1));
    remove();
    feed.update({ entry: { n: 2 }, leader: 'c', term: 1 }, iso(2));
    expect(calls).toBe(1);
  });
});
