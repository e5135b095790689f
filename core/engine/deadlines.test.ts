import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { DeadlineQueue } from './deadlines.js';

describe('DeadlineQueue', () => {
  it('pops in (at, order, kind) order, whatever the push order', () => {
    const entry = fc.record({
      at: fc.integer({ min: 0, max: 20 }),
      order: fc.integer({ min: 0, max: 5 }),
      kind: fc.constantFrom(1, 4),
    });
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 200 }), (entries) => {
        const queue = new DeadlineQueue<string>();
        for (const e of entries) queue.push(e.at, 'key', e.order, e.kind);
        const popped: Array<[number, number, number]> = [];
        for (let e = queue.pop(); e !== undefined; e = queue.pop()) popped.push([e.at, e.order, e.kind]);
        const sorted = entries
          .map((e): [number, number, number] => [e.at, e.order, e.kind])
          .sort((x, y) => x[0] - y[0] || x[1] - y[1] || x[2] - y[2]);
        expect(popped).toEqual(sorted);
        expect(queue.size).toBe(0);
      }),
    );
  });

  it('keeps popping in order when pushes and pops interleave', () => {
    fc.assert(
      fc.property(fc.array(fc.option(fc.integer({ min: 0, max: 1000 }), { nil: undefined })), (ops) => {
        const queue = new DeadlineQueue<number>();
        const model: number[] = [];
        for (const op of ops) {
          if (op === undefined) {
            model.sort((a, b) => a - b);
            expect(queue.pop()?.at).toBe(model.shift());
          } else {
            queue.push(op, op, 0, 0);
            model.push(op);
          }
          expect(queue.peek()?.at).toBe(model.length === 0 ? undefined : Math.min(...model));
        }
      }),
    );
  });

  it('counts its work', () => {
    const queue = new DeadlineQueue<string>();
    const a = queue.push(5, 'a', 0, 1);
    queue.push(3, 'b', 1, 1);
    expect(queue.peek()?.key).toBe('b');
    queue.pop();
    expect(queue.pop()).toBe(a);
    expect(queue.pop()).toBeUndefined();
    expect(queue.counters).toEqual({ pushes: 2, pops: 2 });
  });
});
