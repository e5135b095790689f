import { describe, expect, it } from '@jest/globals';
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
  it('starts with no answer: id 0, everything null', () => {
    expect(createFaultFeed().current()).toEqual({
      id: 0,
      entry: null,
      leader: null,
      term: null,
      at: null,
      answeredAt: null,
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
    });
    expect(calls).toBe(1);
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
