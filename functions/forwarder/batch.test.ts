import { describe, expect, it } from '@jest/globals';
import type { Snapshot } from '../../contracts/index.js';
import { npuSnapshot } from '../../core/engine/testing.js';
import {
  addCall,
  newBatch,
  rejectCallers,
  requestBody,
  resolveCallers,
  sealBatch,
  type Batch,
  type ObservationsJson,
} from './batch.js';
import type { ForwardResult } from './forwarder.js';

function snap(node: string): Snapshot {
  return npuSnapshot({ node, seq: 1, t: 1 }, [{ npu: 0 }]);
}

/** A call that records what it was answered. */
function call(snapshots: Snapshot[], json?: ObservationsJson) {
  const answers: (ForwardResult | Error)[] = [];
  return {
    answers,
    call: {
      snapshots,
      bytes: 10 * snapshots.length,
      json,
      resolve: (result: ForwardResult) => answers.push(result),
      reject: (error: Error) => answers.push(error),
    },
  };
}

function nodesOf(body: Buffer): string[] {
  const parsed = JSON.parse(body.toString('utf8')) as { observations: { snapshot: Snapshot }[] };
  return parsed.observations.map((o) => o.snapshot.node);
}

describe('batch', () => {
  it('adds calls in order, serialising their snapshots unless they came serialised', () => {
    const batch = newBatch(7);
    addCall(batch, call([snap('a'), snap('b')]).call);
    const given = JSON.stringify({ snapshot: snap('c') });
    addCall(batch, call([snap('ignored')], given).call);
    expect(batch).toMatchObject({ id: 7, count: 3, bytes: 30, flushed: false });
    expect(batch.callers.map((c) => [c.offset, c.count])).toEqual([
      [0, 2],
      [2, 1],
    ]);
    sealBatch(batch, 42);
    expect(batch).toMatchObject({ flushed: true, flushedAt: 42, parts: [] });
    expect(nodesOf(requestBody([batch]))).toEqual(['a', 'b', 'c']);
  });

  it('copies byte items and byte parts as they are, between text items, without re-encoding', () => {
    const batch = newBatch(1);
    const raw = Buffer.from(JSON.stringify(snap('b')).replace('"node"', '"note":"ünïcode","node"'));
    addCall(batch, call([snap('a')]).call);
    addCall(batch, call([snap('ignored')], [Buffer.from('{"snapshot":'), raw, Buffer.from('}')]).call);
    addCall(batch, call([snap('ignored')], Buffer.from(JSON.stringify({ snapshot: snap('c') }))).call);
    addCall(batch, call([snap('d')], JSON.stringify({ snapshot: snap('d') })).call);
    sealBatch(batch, 0);
    const body = requestBody([batch]);
    expect(nodesOf(body)).toEqual(['a', 'b', 'c', 'd']);
    expect(body.includes(raw)).toBe(true);
    expect(batch.parts).toEqual([]);
  });

  it('joins several sealed batches into one ObservationsRequest body', () => {
    const batches: Batch[] = ['x', 'y', 'z'].map((node, i) => {
      const batch = newBatch(i + 1);
      addCall(batch, call([snap(node)]).call);
      sealBatch(batch, 0);
      return batch;
    });
    expect(nodesOf(requestBody(batches))).toEqual(['x', 'y', 'z']);
    expect(requestBody([newBatch(9)]).toString()).toBe('{"observations":[]}');
  });

  it('answers each caller with its slice of the leader’s results, then lets go of them', () => {
    const batch = newBatch(1);
    const first = call([snap('a'), snap('b')]);
    const second = call([snap('c')]);
    addCall(batch, first.call);
    addCall(batch, second.call);
    const results = ['a', 'b', 'c'].map((node) => ({ node, accepted: true, entry: null }));
    resolveCallers(batch, { leader: 'r1', term: 3, results });
    expect(first.answers).toEqual([{ leader: 'r1', term: 3, results: results.slice(0, 2) }]);
    expect(second.answers).toEqual([{ leader: 'r1', term: 3, results: results.slice(2) }]);
    expect(batch.callers).toHaveLength(0);
  });

  it('rejects every caller with the one error, then lets go of them', () => {
    const batch = newBatch(1);
    const first = call([snap('a')]);
    const second = call([snap('b')]);
    addCall(batch, first.call);
    addCall(batch, second.call);
    const error = new Error('no leader');
    rejectCallers(batch, error);
    expect([first.answers, second.answers]).toEqual([[error], [error]]);
    expect(batch.callers).toHaveLength(0);
  });
});
