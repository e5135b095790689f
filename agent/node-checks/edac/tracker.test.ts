import { describe, expect, it } from '@jest/globals';
import type { ControllerReading, DimmReading, EdacReading } from './sysfs.js';
import { EdacTracker } from './tracker.js';

const T0 = Date.UTC(2026, 0, 1);
const MIN = 60_000;
const HOUR = 60 * MIN;

function tracker(): EdacTracker {
  return new EdacTracker({ correctablePerHour: 100, holdMs: 24 * HOUR });
}

function mc(
  name: string,
  ce: number | undefined,
  ue: number | undefined,
  dimms: DimmReading[] = [],
): ControllerReading {
  return { name, ce, ue, dimms };
}

function dimm(name: string, ce: number, ue: number): DimmReading {
  return { name, label: `CPU0_${name.toUpperCase()}`, ce, ue };
}

const read = (...controllers: ControllerReading[]): EdacReading => ({ available: true, controllers });

describe('EdacTracker: uncorrectable errors', () => {
  it('takes the first counts as history, and raises any later increase for the hold time', () => {
    const t = tracker();
    const first = t.update(T0, read(mc('mc0', 12, 1, [dimm('dimm0', 12, 1)])));
    expect(first.problems).toEqual([]);
    expect(first.events).toEqual([
      { what: 'available' },
      expect.objectContaining({ what: 'history', controller: 'mc0' }),
    ]);
    const ue = t.update(T0 + MIN, read(mc('mc0', 12, 2, [dimm('dimm0', 12, 1), dimm('dimm1', 0, 1)])));
    expect(ue.problems).toEqual([
      {
        reason: 'host-memory-ecc',
        message: 'mc0: 1 uncorrectable error, last at 2026-01-01T00:01:00Z (CPU0_DIMM1)',
      },
    ]);
    expect(ue.newErrors).toEqual({ correctable: 0, uncorrectable: 1 });
    expect(ue.events).toEqual([expect.objectContaining({ what: 'uncorrectable', controller: 'mc0' })]);
    // Held: still a problem just before the hold ends, gone after it.
    expect(t.update(T0 + MIN + 24 * HOUR - 1, read(mc('mc0', 12, 2))).problems).toHaveLength(1);
    expect(t.update(T0 + MIN + 24 * HOUR, read(mc('mc0', 12, 2))).problems).toEqual([]);
  });

  it('adds up errors of one controller and lists controllers in order', () => {
    const t = tracker();
    t.update(T0, read(mc('mc2', 0, 0), mc('mc10', 0, 0)));
    t.update(T0 + MIN, read(mc('mc2', 0, 1), mc('mc10', 0, 3)));
    const verdict = t.update(T0 + 2 * MIN, read(mc('mc2', 0, 2), mc('mc10', 0, 3)));
    expect(verdict.problems[0]?.message).toBe(
      'mc2: 2 uncorrectable errors, last at 2026-01-01T00:02:00Z; mc10: 3 uncorrectable errors, last at 2026-01-01T00:01:00Z',
    );
  });

  it('counts what a reset controller holds as new (the driver reloaded after the baseline)', () => {
    const t = tracker();
    t.update(T0, read(mc('mc0', 500, 4)));
    const reset = t.update(T0 + MIN, read(mc('mc0', 3, 1)));
    expect(reset.events).toEqual([
      expect.objectContaining({ what: 'reset', controller: 'mc0' }),
      expect.objectContaining({ what: 'uncorrectable' }),
    ]);
    expect(reset.newErrors).toEqual({ correctable: 3, uncorrectable: 1 });
    expect(reset.problems[0]?.message).toMatch(/^mc0: 1 uncorrectable error/);
    // A reset to zero is no error.
    const quiet = tracker();
    quiet.update(T0, read(mc('mc0', 500, 4)));
    expect(quiet.update(T0 + MIN, read(mc('mc0', 0, 0))).problems).toEqual([]);
  });

  it('counts a controller that appears after the baseline from zero, and one that comes back from its last counts', () => {
    const t = tracker();
    t.update(T0, read(mc('mc0', 0, 0)));
    const appeared = t.update(T0 + MIN, read(mc('mc0', 0, 0), mc('mc1', 5, 1)));
    expect(appeared.newErrors).toEqual({ correctable: 5, uncorrectable: 1 });
    expect(appeared.problems[0]?.message).toMatch(/^mc1: 1 uncorrectable error/);
    const gone = t.update(T0 + 2 * MIN, read(mc('mc0', 0, 0)));
    expect(gone.events).toEqual([{ what: 'disappeared', controller: 'mc1' }]);
    const back = t.update(T0 + 3 * MIN, read(mc('mc0', 0, 0), mc('mc1', 5, 1)));
    expect(back.newErrors).toEqual({ correctable: 0, uncorrectable: 0 });
  });

  it('keeps the last counts through a failed read or an unreadable count', () => {
    const t = tracker();
    t.update(T0, read(mc('mc0', 0, 0)));
    expect(t.update(T0 + MIN, undefined).problems).toEqual([]);
    expect(t.update(T0 + 2 * MIN, read(mc('mc0', undefined, undefined))).newErrors).toEqual({
      correctable: 0,
      uncorrectable: 0,
    });
    expect(t.update(T0 + 3 * MIN, read(mc('mc0', 0, 1))).newErrors.uncorrectable).toBe(1);
    // And holds its problem while reads fail.
    expect(t.update(T0 + 4 * MIN, undefined).problems).toHaveLength(1);
  });
});

describe('EdacTracker: correctable errors', () => {
  it('raises a controller with correctablePerHour or more in the last hour, and clears when the hour moves on', () => {
    const t = tracker();
    t.update(T0, read(mc('mc0', 1000, 0, [dimm('dimm0', 1000, 0), dimm('dimm1', 0, 0)])));
    const some = t.update(
      T0 + 10 * MIN,
      read(mc('mc0', 1060, 0, [dimm('dimm0', 1000, 0), dimm('dimm1', 60, 0)])),
    );
    expect(some.problems).toEqual([]);
    expect(some.newErrors.correctable).toBe(60);
    const storm = t.update(
      T0 + 20 * MIN,
      read(mc('mc0', 1100, 0, [dimm('dimm0', 1000, 0), dimm('dimm1', 100, 0)])),
    );
    expect(storm.problems).toEqual([
      { reason: 'host-memory-ecc', message: 'mc0: 100 correctable errors in the last hour (CPU0_DIMM1)' },
    ]);
    expect(storm.events).toEqual([{ what: 'correctable-storm', controller: 'mc0' }]);
    // An hour after the first 60 they leave the window: 40 are left.
    const calm = t.update(T0 + 70 * MIN, read(mc('mc0', 1100, 0)));
    expect(calm.problems).toEqual([]);
    expect(calm.events).toEqual([{ what: 'correctable-calm', controller: 'mc0' }]);
  });

  it('judges each controller on its own', () => {
    const t = tracker();
    t.update(T0, read(mc('mc0', 0, 0), mc('mc1', 0, 0)));
    expect(t.update(T0 + MIN, read(mc('mc0', 60, 0), mc('mc1', 60, 0))).problems).toEqual([]);
  });
});

describe('EdacTracker: no EDAC', () => {
  it('says once that EDAC is unavailable, raises nothing, and baselines when it shows up later', () => {
    const t = tracker();
    const none = t.update(T0, { available: false });
    expect(none).toMatchObject({ problems: [], available: false, events: [{ what: 'unavailable' }] });
    expect(t.update(T0 + MIN, { available: false }).events).toEqual([]);
    const loaded = t.update(T0 + 2 * MIN, read(mc('mc0', 7, 1)));
    expect(loaded.problems).toEqual([]);
    expect(loaded.available).toBe(true);
    expect(loaded.events.map((e) => e.what)).toEqual(['available', 'history']);
  });
});
