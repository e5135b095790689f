import { describe, expect, it } from '@jest/globals';
import { v8FullCollection } from './heap-trim.js';
import { LinkedSet } from './linked-set.js';

describe('LinkedSet', () => {
  it('holds values in the order they came, removing any of them by its handle', () => {
    const set = new LinkedSet<string>();
    const removeA = set.add('a');
    const removeB = set.add('b');
    const removeC = set.add('c');
    expect([set.size, set.values()]).toEqual([3, ['a', 'b', 'c']]);
    removeB();
    expect([set.size, set.values()]).toEqual([2, ['a', 'c']]);
    removeA();
    expect(set.values()).toEqual(['c']);
    set.add('d');
    removeC();
    expect([set.size, set.values()]).toEqual([1, ['d']]);
  });

  it('ignores a second removal, and holds a value added twice twice', () => {
    const set = new LinkedSet<string>();
    const first = set.add('x');
    set.add('x');
    first();
    first();
    expect([set.size, set.values()]).toEqual([1, ['x']]);
  });

  it('empties and fills again from either end', () => {
    const set = new LinkedSet<number>();
    const removes = [1, 2, 3].map((n) => set.add(n));
    removes[2]?.();
    removes[0]?.();
    removes[1]?.();
    expect([set.size, set.values()]).toEqual([0, []]);
    set.add(4);
    set.add(5);
    expect(set.values()).toEqual([4, 5]);
  });

  it('gives a copy that stays as it was while the set changes', () => {
    const set = new LinkedSet<number>();
    const remove = set.add(1);
    set.add(2);
    const values = set.values();
    remove();
    set.add(3);
    expect(values).toEqual([1, 2]);
  });

  it('keeps nothing of a removed value alive, even while its handle is', async () => {
    const set = new LinkedSet<object>();
    let value: object | undefined = { big: new Array(1000).fill('x') };
    const ref = new WeakRef(value);
    const remove = set.add(value);
    set.add({ neighbour: true });
    remove();
    value = undefined;
    // WeakRef targets are kept until the end of the current job: let it end first.
    await new Promise((resolve) => setImmediate(resolve));
    v8FullCollection()();
    expect(ref.deref()).toBeUndefined();
    expect(typeof remove).toBe('function'); // the handle outlived the value
    expect(set.size).toBe(1);
  });
});
