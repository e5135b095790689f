import { describe, expect, it } from '@jest/globals';
import { MAX_SEQ_JUMP, admit, newBootTrack } from './dedup.js';

describe('admit', () => {
  it('takes a new boot, then only newer seqs of it; remembers replaced boots', () => {
    const track = newBootTrack();
    expect(admit(track, 'b1', 1)).toBe('next');
    expect(admit(track, 'b1', 3)).toBe('next');
    expect(admit(track, 'b1', 3)).toBe('duplicate');
    expect(admit(track, 'b1', 2)).toBe('out-of-order');
    expect(admit(track, 'b2', 1)).toBe('new-boot');
    expect(admit(track, 'b1', 4)).toBe('old-boot');
  });

  it('a seq far ahead (threat: a forged snapshot) does not lock out the sequence it jumped from', () => {
    const track = newBootTrack();
    for (let seq = 1; seq <= 100; seq++) expect(admit(track, 'b1', seq)).toBe('next');
    // Within MAX_SEQ_JUMP a gap is an ordinary gap: the old sequence is over.
    expect(admit(track, 'b1', 100 + MAX_SEQ_JUMP)).toBe('next');
    expect(admit(track, 'b1', 101)).toBe('out-of-order');
    // Beyond it, the real agent's next snapshots still go in, in order, once each.
    const forged = 100 + 2 * MAX_SEQ_JUMP + 1;
    expect(admit(track, 'b1', forged)).toBe('next');
    expect(admit(track, 'b1', 100 + MAX_SEQ_JUMP + 1)).toBe('behind-jump');
    expect(admit(track, 'b1', 100 + MAX_SEQ_JUMP + 2)).toBe('behind-jump');
    expect(admit(track, 'b1', 100 + MAX_SEQ_JUMP + 2)).toBe('duplicate');
    expect(admit(track, 'b1', 100 + MAX_SEQ_JUMP + 1)).toBe('out-of-order');
    // The forger's lane goes on as before, and a new boot forgets the jump.
    expect(admit(track, 'b1', forged + 1)).toBe('next');
    expect(admit(track, 'b2', 1)).toBe('new-boot');
    expect(admit(track, 'b2', 5 + 2 * MAX_SEQ_JUMP)).toBe('next');
    expect(admit(track, 'b2', 2)).toBe('behind-jump');
    expect(admit(track, 'b2', 1)).toBe('out-of-order');
  });

  it('the lane below cannot be pushed ahead by a forged snapshot in it', () => {
    const track = newBootTrack();
    for (let seq = 1; seq <= 10; seq++) admit(track, 'b', seq);
    expect(admit(track, 'b', 10 + 1000 * MAX_SEQ_JUMP)).toBe('next'); // lane below: 10
    // A forger's second snapshot just under its first, far into the lane: refused.
    expect(admit(track, 'b', 10 + 1000 * MAX_SEQ_JUMP - 1)).toBe('out-of-order');
    // Within the lane's reach it is taken, and holds the agent back by at most MAX_SEQ_JUMP.
    expect(admit(track, 'b', 10 + MAX_SEQ_JUMP)).toBe('behind-jump');
    expect(admit(track, 'b', 11)).toBe('out-of-order');
    expect(admit(track, 'b', 11 + MAX_SEQ_JUMP)).toBe('behind-jump');
  });

  it('a second jump keeps the first lane (two forged jumps cannot lock the agent out)', () => {
    const track = newBootTrack();
    admit(track, 'b', 1);
    admit(track, 'b', 2 + MAX_SEQ_JUMP);
    admit(track, 'b', 4 + 2 * MAX_SEQ_JUMP);
    expect(admit(track, 'b', 2)).toBe('behind-jump');
    expect(admit(track, 'b', 3)).toBe('behind-jump');
  });
});
