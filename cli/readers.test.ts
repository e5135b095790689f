/**
 * Every reader of the published status takes the same documents the same way (CONTRACT §5.3):
 * the contract's rules (contracts/published-health.ts), the consumer SDK through a follower,
 * `npu-fault status`, the Python example, `npu-fault explain` and the agent's node-local
 * answer. The documents are the golden vectors of an ingest outage, a flooding agent and the
 * byte budget, and one where nothing was left out.
 */
import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createFaultFeed } from '../agent/local/index.js';
import {
  nodeHealth,
  publishedDocumentSchema,
  type NodeHealth,
  type PublishedDocument,
  type PublishedNode,
} from '../contracts/index.js';
import {
  createFollower,
  type FailedDevice,
  type StatusFollower,
  type StatusUpdate,
  type Transport,
  type TransportSink,
} from '../consumer/index.js';
import { createEngine, type ReloadableEngine } from '../core/engine/index.js';
import { parseSnapshotLine } from '../core/replay/index.js';
import { parseRules } from '../core/rules/index.js';
import { renderExplanation } from './explain.js';
import { nodeStatus, unlistedNode } from './status/index.js';

const golden = (name: string): URL => new URL(`../golden/${name}`, import.meta.url);

/**
 * A golden trace through an engine with replay's clock (the largest collected_at so far) and
 * the case's rules (a byte budget of `maxBytes` when given), its document rendered at the end.
 */
function replayed(
  file: string,
  maxBytes?: number,
): { engine: ReloadableEngine; now: number; document: PublishedDocument } {
  const rules = parseRules(readFileSync(golden(`${file}.rules.yaml`), 'utf8'));
  const engine = createEngine(
    maxBytes === undefined ? rules : { ...rules, publish: { ...rules.publish, max_bytes: maxBytes } },
  );
  let now = 0;
  readFileSync(golden(`${file}.jsonl`), 'utf8')
    .split('\n')
    .forEach((text, i) => {
      const snapshot = parseSnapshotLine(text, file, i + 1);
      if (!snapshot) return;
      now = Math.max(now, Date.parse(snapshot.collected_at));
      engine.tick(now - 1);
      engine.observe(snapshot, now);
    });
  engine.tick(now);
  return { engine, now, document: engine.document(now, { identity: 'test', term: 0 }) };
}

function documentOf(file: string): PublishedDocument {
  return publishedDocumentSchema.parse(JSON.parse(readFileSync(golden(`${file}.published.json`), 'utf8')));
}

/** The documents, each with the nodes to ask about and what every reader must say. */
const CASES: { name: string; document: () => PublishedDocument; expect: Record<string, NodeHealth> }[] = [
  {
    // Nodes 00-03 silent (4 of 10: an ingest outage); node-03 holds a failed device, node-01 a degraded one.
    name: 'ingest-outage-keeps-failures',
    document: () => documentOf('ingest-outage-keeps-failures'),
    expect: {
      'node-03': 'failed',
      'node-01': 'unknown',
      'node-00': 'unknown',
      'node-05': 'unknown',
      'never-seen': 'unknown',
    },
  },
  {
    // One agent flooding fresh GPU uuids: bounded, and the other node's XID 79 stays listed.
    name: 'flood-bounded-per-node',
    document: () => documentOf('flood-bounded-per-node'),
    expect: { 'gpu-a': 'failed', 'gpu-flood': 'healthy', 'never-seen': 'healthy' },
  },
  {
    // A tight byte budget: signals go first, then a share; nothing is cut, so unlisted is healthy.
    name: 'budget-keeps-failures',
    document: () => documentOf('budget-keeps-failures'),
    expect: {
      'big-node': 'failed',
      'node-b': 'failed',
      'node-c': 'degraded',
      'node-d': 'unknown',
      'node-e': 'healthy',
      'node-h0': 'healthy',
    },
  },
  {
    // The same trace at 1,500 bytes: node-d and node-c are cut, so a node not listed is unknown.
    name: 'budget-keeps-failures at 1,500 bytes',
    document: () => replayed('budget-keeps-failures', 1500).document,
    expect: {
      'big-node': 'failed',
      'node-b': 'failed',
      'node-c': 'unknown',
      'node-d': 'unknown',
      'node-e': 'unknown',
    },
  },
  {
    // Nothing left out: a node not listed is healthy.
    name: 'failed-stays-failed-while-silent',
    document: () => documentOf('failed-stays-failed-while-silent'),
    expect: { 'node-a': 'failed', 'never-seen': 'healthy' },
  },
];

/** A follower of `node` on a transport the test delivers to itself (`sink`), on a still clock. */
function following(
  kind: Transport['kind'],
  node: string | null,
): { follower: StatusFollower; sink: TransportSink } {
  const delivered: { sink?: TransportSink } = {};
  const transport: Transport = {
    kind,
    start: (s) => void (delivered.sink = s),
    stop: () => Promise.resolve(),
    stats: () => ({}),
  };
  const follower = createFollower(transport, {
    node,
    staleAfterMs: 3_600_000,
    clock: { now: () => 0, schedule: () => () => undefined },
  });
  if (!delivered.sink) throw new Error('the follower did not start its transport');
  return { follower, sink: delivered.sink };
}

/** The follower's view of `document` for `node`, delivered as a transport would. */
function followerView(documents: PublishedDocument[], node: string | null): StatusUpdate {
  const { follower, sink } = following('watch', node);
  for (const document of documents) sink.document(document);
  const view = follower.current();
  void follower.close();
  if (!view) throw new Error('no view');
  return view;
}

/** What `npu-fault status --node X -o json` says of a node's health. */
function statusCliHealth(document: PublishedDocument, node: string): string {
  const entry = Object.hasOwn(document.nodes, node) ? document.nodes[node] : undefined;
  return entry ? nodeStatus(entry) : unlistedNode(document, node).status;
}

const python = spawnSync('python3', ['--version']).status === 0;

describe('readers agree on every document (CONTRACT §5.3)', () => {
  describe.each(CASES)('$name', ({ name, document: build, expect: expected }) => {
    const document = build();

    it.each(Object.entries(expected))(
      '%s is %s to the contract, the SDK and npu-fault status',
      (node, health) => {
        expect(nodeHealth(document, node)).toBe(health);
        expect(followerView([document], node).health).toBe(health);
        expect(statusCliHealth(document, node)).toBe(health);
      },
    );

    const pythonCase = python ? it : it.skip;
    pythonCase('the Python example says the same of each node (skipped without python3)', () => {
      const script = fileURLToPath(new URL('../examples/consumer-python/follow.py', import.meta.url));
      const file = join(mkdtempSync(join(tmpdir(), 'readers-')), `${name.replace(/\W+/g, '-')}.json`);
      writeFileSync(file, JSON.stringify(document));
      for (const [node, health] of Object.entries(expected)) {
        const run = spawnSync('python3', [script, file, node], { encoding: 'utf8' });
        expect({ node, status: run.status, out: run.stdout.split(':')[0]?.trim() }).toEqual({
          node,
          status: 0,
          out: health,
        });
      }
    });
  });
});

describe('explain says when the document leaves a node out', () => {
  it('a stale node summarised in an outage is withheld; one holding a failure is listed', () => {
    const { engine, now } = replayed('ingest-outage-keeps-failures');
    const summarised = engine.explain('node-00', undefined, now);
    const listed = engine.explain('node-03', undefined, now);
    expect(summarised).toMatchObject({ tracked: true, withheld: 'ingest-outage' });
    expect(listed).toMatchObject({ tracked: true, withheld: null });
    const text = renderExplanation({
      leader: true,
      identity: 'c-0',
      term: 1,
      leader_identity: 'c-0',
      explanation: summarised as Extract<typeof summarised, { tracked: true }>,
    });
    expect(text).toContain('not listed in the published status (an ingest outage');
  });

  it('a node cut for the byte budget is withheld', () => {
    const { engine, now } = replayed('budget-keeps-failures', 1500);
    expect(engine.explain('node-d', undefined, now)).toMatchObject({ withheld: 'size-budget' });
    expect(engine.explain('big-node', undefined, now)).toMatchObject({ withheld: null });
  });
});

describe("the agent's node-local answer, read by the SDK", () => {
  const failedEntry = (): PublishedNode => documentOf('ingest-outage-keeps-failures').nodes['node-03']!;

  function sseView(feed: ReturnType<typeof createFaultFeed>, node: string): StatusUpdate {
    const { follower, sink } = following('sse', node);
    const deliver = (): void => {
      const state = feed.current();
      sink.entry({
        node,
        entry: state.entry as PublishedNode | null,
        leader: state.leader,
        term: state.term,
        updatedAt: state.at,
        stale: state.stale,
      });
    };
    deliver();
    feed.subscribe(deliver);
    return new Proxy({} as StatusUpdate, {
      get: (_, key) => follower.current()?.[key as keyof StatusUpdate],
    });
  }

  it('an old healthy answer is unknown, an old failure stays failed, a fresh answer is believed', () => {
    let now = Date.UTC(2026, 11, 1);
    const timers: (() => void)[] = [];
    const clock = {
      now: () => now,
      schedule: (_ms: number, fire: () => void) => (timers.push(fire), () => undefined),
    };
    const healthy = createFaultFeed({ clock, staleAfterMs: 10_000 });
    const view = sseView(healthy, 'node-05');
    expect(view.health).toBe('unknown'); // no answer yet
    healthy.update({ entry: null, leader: 'c-0', term: 1 }, new Date(now).toISOString());
    expect(view.health).toBe('healthy');
    now += 10_000;
    timers.splice(0).forEach((fire) => fire());
    expect(view.health).toBe('unknown');

    const failing = createFaultFeed({ clock, staleAfterMs: 10_000 });
    const failed = sseView(failing, 'node-03');
    failing.update({ entry: failedEntry(), leader: 'c-0', term: 1 }, new Date(now).toISOString());
    const before: FailedDevice[] = failed.failed;
    expect(before.map((f) => f.device.id)).toEqual(['npu2']);
    now += 10_000;
    timers.splice(0).forEach((fire) => fire());
    expect(failed.health).toBe('failed');
    expect(failed.failed.map((f) => f.device.id)).toEqual(['npu2']);
  });
});
