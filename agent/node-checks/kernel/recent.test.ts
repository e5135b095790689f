import { describe, expect, it } from '@jest/globals';
import { MAX_SUBJECTS, RecentEvents } from './recent.js';

describe('RecentEvents', () => {
  it('counts the messages after a time, and says when the ring may have dropped some', () => {
    const recent = new RecentEvents(3);
    expect(recent.last()).toBeNull();
    expect(recent.countSince(0)).toEqual({ count: 0, atLeast: false });
    recent.add(10, 'a', 'first');
    recent.add(20, 'b', 'second');
    expect(recent.countSince(15)).toEqual({ count: 1, atLeast: false });
    recent.add(30, 'c', 'third');
    recent.add(40, 'd', 'fourth');
    // Full: 20, 30, 40 kept; 10 dropped, which was after 5 too.
    expect(recent.countSince(5)).toEqual({ count: 3, atLeast: true });
    // Its oldest kept (20) is not after 25: nothing after 25 was dropped.
    expect(recent.countSince(25)).toEqual({ count: 2, atLeast: false });
    expect(recent.last()).toEqual({ at: 40, detail: 'fourth' });
  });

  it('keeps the last few subjects, each once, the one named again moved to the end', () => {
    const recent = new RecentEvents(4);
    for (let i = 0; i < MAX_SUBJECTS + 3; i++) recent.add(i, `dev${i}`, 'x');
    recent.add(100, `dev${MAX_SUBJECTS}`, 'x');
    const subjects = recent.subjectsSince(-1);
    expect(subjects).toHaveLength(MAX_SUBJECTS);
    expect(subjects[0]).toBe('dev3');
    expect(subjects.at(-1)).toBe(`dev${MAX_SUBJECTS}`);
    expect(recent.subjectsSince(MAX_SUBJECTS + 1)).toEqual([`dev${MAX_SUBJECTS + 2}`, `dev${MAX_SUBJECTS}`]);
  });
});
