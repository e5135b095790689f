import { describe, expect, it } from '@jest/globals';
import { WriteSchedule, type ScheduleSettings } from './schedule.js';

const SETTINGS: ScheduleSettings = {
  tickMinMs: 1000,
  tickMaxMs: 1200,
  earlyMinGapMs: 250,
  heartbeatMs: 1000,
};

/** A random source that replays `values`, then repeats the last one. */
function replay(...values: number[]): () => number {
  let i = 0;
  return () => values[Math.min(i++, values.length - 1)] ?? 0;
}

describe('WriteSchedule', () => {
  it('is due at once on start', () => {
    expect(new WriteSchedule(SETTINGS, 5000, replay(0)).due()).toBe(5000);
  });

  it('ticks uniformly in [tickMinMs, tickMaxMs] after each acknowledgement', () => {
    const schedule = new WriteSchedule(SETTINGS, 0, replay(0, 0.5, 0.999));
    schedule.written('a', 40);
    expect(schedule.due()).toBe(1040);
    schedule.written('b', 1100);
    expect(schedule.due()).toBe(2200);
    schedule.written('c', 2250);
    expect(schedule.due()).toBeCloseTo(2250 + 1199.8, 6);
  });

  it('pulls the next write forward to earlyMinGapMs after the last acknowledgement', () => {
    const schedule = new WriteSchedule(SETTINGS, 0, replay(0.5));
    schedule.written('a', 100);
    schedule.requestEarly(150);
    expect(schedule.due()).toBe(350);
    expect(schedule.earlyPending).toBe(true);
  });

  it('writes an early request made long after the last write at once', () => {
    const schedule = new WriteSchedule(SETTINGS, 0, replay(0.5));
    schedule.written('a', 100);
    schedule.requestEarly(700);
    expect(schedule.due()).toBe(700);
  });

  it('keeps the first request of a burst (requests do not push the write back)', () => {
    const schedule = new WriteSchedule(SETTINGS, 0, replay(0.5));
    schedule.written('a', 0);
    schedule.requestEarly(400);
    schedule.requestEarly(900);
    expect(schedule.due()).toBe(400);
  });

  it('does not let an early request delay a tick that comes sooner', () => {
    const schedule = new WriteSchedule({ ...SETTINGS, earlyMinGapMs: 1000 }, 0, replay(0));
    schedule.written('a', 0);
    schedule.requestEarly(1500);
    expect(schedule.due()).toBe(1000);
  });

  it('clears a request once a write renders, and keeps one made during the write', () => {
    const schedule = new WriteSchedule(SETTINGS, 0, replay(0.5));
    schedule.requestEarly(0);
    schedule.rendering(0);
    expect(schedule.earlyPending).toBe(false);
    schedule.requestEarly(30); // the write in flight may have rendered before this failure
    schedule.written('a', 60);
    expect(schedule.due()).toBe(250); // earlyMinGapMs after the write in flight began
    expect(schedule.earlyPending).toBe(true);
  });

  it('measures the early gap from a failed attempt too', () => {
    const schedule = new WriteSchedule(SETTINGS, 0, replay(0.5));
    schedule.ended(500);
    expect(schedule.due()).toBe(1600);
    schedule.requestEarly(510);
    expect(schedule.due()).toBe(750);
  });

  it('measures the tick from when the previous write began, not from its acknowledgement', () => {
    const schedule = new WriteSchedule(SETTINGS, 0, replay(0.5));
    schedule.rendering(1000);
    schedule.written('a', 1180); // a slow write: 180 ms
    expect(schedule.due()).toBe(2100);
  });

  it('measures the early gap from when the previous write began', () => {
    const schedule = new WriteSchedule(SETTINGS, 0, replay(0.5));
    schedule.rendering(1000);
    schedule.written('a', 1100);
    schedule.requestEarly(1120);
    expect(schedule.due()).toBe(1250);
  });

  it('after a write slower than a tick, waits earlyMinGapMs after its acknowledgement', () => {
    const schedule = new WriteSchedule(SETTINGS, 0, replay(0.5));
    schedule.rendering(1000);
    schedule.written('a', 3000);
    expect(schedule.due()).toBe(3250);
  });

  describe('heartbeat', () => {
    it('writes a changed document whenever it is due', () => {
      const schedule = new WriteSchedule({ ...SETTINGS, heartbeatMs: 10_000 }, 0, replay(0));
      schedule.written('a', 0);
      expect(schedule.worthWriting('b', 300)).toBe(true);
    });

    it('skips an unchanged document until heartbeatMs have passed since the last write', () => {
      const schedule = new WriteSchedule({ ...SETTINGS, heartbeatMs: 5000 }, 0, replay(0));
      schedule.written('a', 0);
      expect(schedule.worthWriting('a', 1000)).toBe(false);
      schedule.skipped(1000);
      expect(schedule.due()).toBe(2000);
      expect(schedule.worthWriting('a', 4999)).toBe(false);
      expect(schedule.worthWriting('a', 5000)).toBe(true);
    });

    it('with the default 1 s heartbeat, writes at every tick', () => {
      const schedule = new WriteSchedule(SETTINGS, 0, replay(0));
      schedule.written('a', 0);
      expect(schedule.worthWriting('a', schedule.due())).toBe(true);
    });

    it('skips an early write whose document did not change', () => {
      const schedule = new WriteSchedule(SETTINGS, 0, replay(0.5));
      schedule.written('a', 0);
      schedule.requestEarly(100);
      expect(schedule.worthWriting('a', schedule.due())).toBe(false);
    });
  });
});
