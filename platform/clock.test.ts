import { describe, expect, it, jest } from '@jest/globals';
import { FakeClock, systemClock } from './clock.js';

describe('FakeClock', () => {
  it('starts at the given wall time and moves wall and monotonic time together', async () => {
    const clock = new FakeClock(1_000_000);
    expect([clock.now(), clock.monotonic()]).toEqual([1_000_000, 0]);
    await clock.advance(250);
    expect([clock.now(), clock.monotonic()]).toEqual([1_000_250, 250]);
  });

  it('fires timers in deadline order, ties in scheduling order, each seeing its own deadline', async () => {
    const clock = new FakeClock(0);
    const fired: string[] = [];
    const record = (name: string) => () => fired.push(`${name}@${clock.now()}`);
    clock.schedule(30, record('c'));
    clock.schedule(10, record('a'));
    clock.schedule(20, record('b1'));
    clock.schedule(20, record('b2'));
    clock.schedule(31, record('late'));
    await clock.advance(30);
    expect(fired).toEqual(['a@10', 'b1@20', 'b2@20', 'c@30']);
    expect(clock.pending).toBe(1);
    await clock.advance(1);
    expect(fired.at(-1)).toBe('late@31');
  });

  it('does not fire a cancelled timer', async () => {
    const clock = new FakeClock(0);
    let fired = false;
    const cancel = clock.schedule(5, () => (fired = true));
    cancel();
    await clock.advance(10);
    expect(fired).toBe(false);
    expect(clock.pending).toBe(0);
  });

  it('drives a loop that sleeps, awaits, and sleeps again through every iteration', async () => {
    const clock = new FakeClock(0);
    const ticks: number[] = [];
    const loop = async (): Promise<void> => {
      for (let i = 0; i < 5; i++) {
        await clock.sleep(100);
        await Promise.resolve(); // more work between sleeps
        ticks.push(clock.monotonic());
      }
    };
    const done = loop();
    await clock.advance(350);
    expect(ticks).toEqual([100, 200, 300]);
    await clock.advance(1000);
    await done;
    expect(ticks).toEqual([100, 200, 300, 400, 500]);
  });

  it('treats negative and NaN delays as zero', async () => {
    const clock = new FakeClock(0);
    const fired: number[] = [];
    clock.schedule(-5, () => fired.push(clock.monotonic()));
    clock.schedule(Number.NaN, () => fired.push(clock.monotonic()));
    await clock.advance(0);
    expect(fired).toEqual([0, 0]);
  });

  it('rejects a sleep with the abort reason and forgets its timer', async () => {
    const clock = new FakeClock(0);
    const controller = new AbortController();
    const sleeping = clock.sleep(1000, controller.signal);
    const reason = new Error('stopping');
    controller.abort(reason);
    await expect(sleeping).rejects.toBe(reason);
    expect(clock.pending).toBe(0);
  });

  it('rejects at once when the signal has already aborted', async () => {
    const clock = new FakeClock(0);
    await expect(clock.sleep(10, AbortSignal.abort('gone'))).rejects.toBe('gone');
    expect(clock.pending).toBe(0);
  });

  it('resolves a sleep whose signal never aborts, and detaches its listener', async () => {
    const clock = new FakeClock(0);
    const controller = new AbortController();
    const sleeping = clock.sleep(10, controller.signal);
    await clock.advance(10);
    await expect(sleeping).resolves.toBeUndefined();
    controller.abort(new Error('late')); // must not reject anything now
  });

  it('throws the error of a failing callback from advance, stopped at its deadline', async () => {
    const clock = new FakeClock(0);
    clock.schedule(10, () => {
      throw new Error('boom');
    });
    await expect(clock.advance(100)).rejects.toThrow('boom');
    expect(clock.monotonic()).toBe(10);
  });

  it('set() advances to a wall time and refuses to go back', async () => {
    const clock = new FakeClock(1000);
    let fired = false;
    clock.schedule(500, () => (fired = true));
    await clock.set(1500);
    expect([fired, clock.monotonic()]).toEqual([true, 500]);
    await expect(clock.set(1400)).rejects.toThrow(RangeError);
    await expect(clock.advance(-1)).rejects.toThrow(RangeError);
  });

  it('stepWallClock moves only wall time: timers keep their monotonic deadlines', async () => {
    const clock = new FakeClock(10_000);
    let fired = false;
    clock.schedule(100, () => (fired = true));
    clock.stepWallClock(-5_000);
    expect([clock.now(), clock.monotonic()]).toEqual([5_000, 0]);
    await clock.advance(99);
    expect(fired).toBe(false);
    await clock.advance(1);
    expect(fired).toBe(true);
  });
});

describe('systemClock', () => {
  it('reads the real clocks', () => {
    const before = Date.now();
    expect(systemClock.now()).toBeGreaterThanOrEqual(before);
    const a = systemClock.monotonic();
    expect(systemClock.monotonic()).toBeGreaterThanOrEqual(a);
  });

  it('resolves a zero sleep and rejects an aborted one with the reason', async () => {
    await expect(systemClock.sleep(0)).resolves.toBeUndefined();
    const controller = new AbortController();
    const sleeping = systemClock.sleep(60_000, controller.signal);
    controller.abort(new Error('stop'));
    await expect(sleeping).rejects.toThrow('stop');
  });

  it('cancels a scheduled callback', async () => {
    let fired = false;
    const cancel = systemClock.schedule(0, () => (fired = true));
    cancel();
    await systemClock.sleep(1);
    expect(fired).toBe(false);
  });

  it('waits past the 24.8-day limit of runtime timers instead of firing at once', () => {
    jest.useFakeTimers();
    try {
      let fired = false;
      systemClock.schedule(2 ** 31 + 1000, () => (fired = true));
      jest.advanceTimersByTime(2 ** 31);
      expect(fired).toBe(false);
      jest.advanceTimersByTime(1000);
      expect(fired).toBe(true);
    } finally {
      jest.useRealTimers();
    }
  });
});
