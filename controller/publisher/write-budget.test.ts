import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { WriteBudget, type WriteBudgetLimits } from './write-budget.js';

const CONTRACT: WriteBudgetLimits = {
  maxWritesPerSecond: 4,
  maxBytesPerSecond: 256 * 1024,
  bytesWindowSeconds: 60,
};
const KIB = 1024;

describe('WriteBudget', () => {
  it('lets a write go at once while both ceilings have room', () => {
    const budget = new WriteBudget(CONTRACT);
    expect(budget.earliest(0, 900 * KIB)).toEqual({ at: 0, limitedBy: undefined });
    budget.record(0, 900 * KIB);
    expect(budget.earliest(10, 1000)).toEqual({ at: 10, limitedBy: undefined });
  });

  it('holds the fifth write of a second until the first leaves the 1 s window', () => {
    const budget = new WriteBudget(CONTRACT);
    for (const at of [0, 100, 200, 300]) budget.record(at, 10);
    expect(budget.earliest(400, 10)).toEqual({ at: 1000, limitedBy: 'writes' });
    // At 1000 the window (0, 1000] holds 100, 200, 300: one more fits.
    expect(budget.earliest(1000, 10)).toEqual({ at: 1000, limitedBy: undefined });
  });

  it('holds a write that would exceed the bytes of the trailing window until enough has left it', () => {
    const budget = new WriteBudget({ maxWritesPerSecond: 4, maxBytesPerSecond: 100, bytesWindowSeconds: 10 });
    expect(budget.allowance).toBe(1000);
    budget.record(0, 400);
    budget.record(2000, 400);
    // 800 in the window: 300 more does not fit until the write at 0 has left (at 10 000).
    expect(budget.earliest(3000, 300)).toEqual({ at: 10_000, limitedBy: 'bytes' });
    // 200 fits now (800 + 200 = 1000, the allowance itself).
    expect(budget.earliest(3000, 200)).toEqual({ at: 3000, limitedBy: undefined });
    // 700 needs both to leave: the later one leaves at 12 000.
    expect(budget.earliest(3000, 700)).toEqual({ at: 12_000, limitedBy: 'bytes' });
  });

  it('names the ceiling that holds a write back longest', () => {
    const budget = new WriteBudget({ maxWritesPerSecond: 1, maxBytesPerSecond: 100, bytesWindowSeconds: 5 });
    budget.record(0, 500);
    expect(budget.earliest(100, 1)).toEqual({ at: 5000, limitedBy: 'bytes' });
    const rate = new WriteBudget({ maxWritesPerSecond: 1, maxBytesPerSecond: 100, bytesWindowSeconds: 5 });
    rate.record(0, 1);
    expect(rate.earliest(100, 1)).toEqual({ at: 1000, limitedBy: 'writes' });
  });

  it('sends a write larger than the whole allowance once the window is empty, alone', () => {
    const budget = new WriteBudget({ maxWritesPerSecond: 4, maxBytesPerSecond: 100, bytesWindowSeconds: 10 });
    // Nothing written yet: it goes at once.
    expect(budget.earliest(0, 5000)).toEqual({ at: 0, limitedBy: undefined });
    budget.record(0, 5000);
    // Anything after it waits until it has left the window.
    expect(budget.earliest(1, 1)).toEqual({ at: 10_000, limitedBy: 'bytes' });
    budget.record(10_000, 10);
    // Another oversized one waits until the window is empty again.
    expect(budget.earliest(10_001, 5000)).toEqual({ at: 20_000, limitedBy: 'bytes' });
  });

  it('forgets writes that can no longer hold anything back', () => {
    const budget = new WriteBudget({ maxWritesPerSecond: 4, maxBytesPerSecond: 100, bytesWindowSeconds: 2 });
    for (let at = 0; at < 100_000; at += 500) budget.record(at, 1);
    expect(budget.recent().length).toBeLessThanOrEqual(4);
  });

  it.each([
    ['maxWritesPerSecond', { ...CONTRACT, maxWritesPerSecond: 0 }],
    ['maxBytesPerSecond', { ...CONTRACT, maxBytesPerSecond: -1 }],
    ['bytesWindowSeconds', { ...CONTRACT, bytesWindowSeconds: Number.NaN }],
  ])('refuses a non-positive %s, naming it', (field, limits) => {
    expect(() => new WriteBudget(limits)).toThrow(
      new RegExp(`^write budget: ${field} must be a positive number`),
    );
  });

  it('refuses a write recorded before the last one', () => {
    const budget = new WriteBudget(CONTRACT);
    budget.record(100, 1);
    expect(() => budget.record(99, 1)).toThrow(/time order/);
  });
});

/** A request to write `bytes`, `gap` ms after the previous request. */
const requests = fc.array(
  fc.record({
    gap: fc.oneof(fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 3000 })),
    bytes: fc.oneof(fc.integer({ min: 1, max: 400 }), fc.integer({ min: 1, max: 2500 })),
    // How long the request takes to be acknowledged once sent.
    latency: fc.integer({ min: 0, max: 300 }),
  }),
  { minLength: 1, maxLength: 120 },
);
const limits = fc.record({
  maxWritesPerSecond: fc.integer({ min: 1, max: 6 }),
  maxBytesPerSecond: fc.integer({ min: 50, max: 400 }),
  bytesWindowSeconds: fc.integer({ min: 1, max: 8 }),
});

/**
 * Plays requests through the budget as the publisher does: each is sent at
 * max(requested, earliest, previous acknowledgement) and recorded when acknowledged.
 */
function play(
  budgetLimits: WriteBudgetLimits,
  sequence: { gap: number; bytes: number; latency: number }[],
): { requestedAt: number; ackAt: number; bytes: number }[] {
  const budget = new WriteBudget(budgetLimits);
  const done: { requestedAt: number; ackAt: number; bytes: number }[] = [];
  let requestedAt = 0;
  let free = 0;
  for (const { gap, bytes, latency } of sequence) {
    requestedAt += gap;
    const now = Math.max(requestedAt, free);
    const { at } = budget.earliest(now, bytes);
    expect(at).toBeGreaterThanOrEqual(now);
    expect(Number.isFinite(at)).toBe(true);
    const ackAt = at + latency;
    budget.record(ackAt, bytes);
    free = ackAt;
    done.push({ requestedAt, ackAt, bytes });
  }
  return done;
}

describe('WriteBudget properties', () => {
  it('never more than maxWritesPerSecond acknowledgements in any 1 s window', () => {
    fc.assert(
      fc.property(limits, requests, (budgetLimits, sequence) => {
        const writes = play(budgetLimits, sequence);
        // The fullest window can be taken to start at a write.
        for (const first of writes) {
          const inWindow = writes.filter((w) => w.ackAt >= first.ackAt && w.ackAt < first.ackAt + 1000);
          expect(inWindow.length).toBeLessThanOrEqual(budgetLimits.maxWritesPerSecond);
        }
      }),
    );
  });

  it('never more than the byte allowance in any window, except an oversized write alone in its windows', () => {
    fc.assert(
      fc.property(limits, requests, (budgetLimits, sequence) => {
        const writes = play(budgetLimits, sequence);
        const windowMs = budgetLimits.bytesWindowSeconds * 1000;
        const allowance = budgetLimits.maxBytesPerSecond * budgetLimits.bytesWindowSeconds;
        // The fullest window can be taken to end at a write: (end - window, end].
        for (const last of writes) {
          const inWindow = writes.filter((w) => w.ackAt > last.ackAt - windowMs && w.ackAt <= last.ackAt);
          const bytes = inWindow.reduce((sum, w) => sum + w.bytes, 0);
          if (inWindow.some((w) => w.bytes > allowance)) expect(inWindow).toHaveLength(1);
          else expect(bytes).toBeLessThanOrEqual(allowance);
        }
      }),
    );
  });

  it('every write eventually goes, no later than the window after the previous one allows', () => {
    fc.assert(
      fc.property(limits, requests, (budgetLimits, sequence) => {
        const writes = play(budgetLimits, sequence);
        expect(writes).toHaveLength(sequence.length);
        const windowMs = budgetLimits.bytesWindowSeconds * 1000;
        let previousAck = -Infinity;
        for (const [i, write] of writes.entries()) {
          const latency = sequence[i]?.latency ?? 0;
          // Sent at most one window after both its request and the previous acknowledgement.
          expect(write.ackAt - latency).toBeLessThanOrEqual(
            Math.max(write.requestedAt, previousAck) + windowMs,
          );
          previousAck = write.ackAt;
        }
      }),
    );
  });
});
