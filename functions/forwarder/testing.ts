/**
 * Fake controller replicas for tests: node:http servers on 127.0.0.1 port 0 that answer
 * `POST /v1/observations` the way a controller does (leader or follower answer, one result
 * per observation, `dropped: "duplicate"` for a node and seq seen before), and can hang,
 * fail, or refuse on demand. Also a fake ReplicaSource and LeaderSource.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OBSERVATIONS_PATH, type PublishedNode } from '../../contracts/index.js';
import { Listeners, type LeaderSource, type Replica, type ReplicaSource } from './replicas.js';

/** One request a fake replica received. */
export interface ReceivedRequest {
  readonly authorization: string | undefined;
  /** The snapshots' nodes, in order. */
  readonly nodes: string[];
  /** The snapshots as received. */
  readonly snapshots: { node: string; seq: number }[];
}

/** A fake controller replica. */
export class FakeReplica {
  readonly identity: string;
  /** Whether it answers as the leader. */
  leading = false;
  /** The leader it names when following. */
  leaderIdentity: string | null = null;
  term = 1;
  /** Answers with this status and an error body instead (undefined: 200). */
  failWith: number | undefined;
  /** Holds every answer until `release()`. */
  hanging = false;
  /** The entry a leader answers for a node (default null: healthy). */
  entryFor: (node: string) => PublishedNode | null = () => null;
  readonly received: ReceivedRequest[] = [];
  #server: Server | undefined;
  #url = '';
  readonly #held: (() => void)[] = [];
  readonly #seen = new Set<string>();
  readonly #waiters: { count: number; resolve: () => void }[] = [];

  constructor(identity: string) {
    this.identity = identity;
  }

  /** Listens on a free loopback port; returns itself. */
  async listen(): Promise<this> {
    const server = createServer((req, res) => void this.#handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: '127.0.0.1', port: 0 }, resolve);
    });
    this.#server = server;
    this.#url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this;
  }

  get url(): string {
    return this.#url;
  }

  get replica(): Replica {
    return { identity: this.identity, url: this.#url };
  }

  /** Snapshots received, in order, over all requests. */
  get snapshotsReceived(): number {
    return this.received.reduce((sum, request) => sum + request.nodes.length, 0);
  }

  /** Resolves once `count` requests have arrived (held ones included). */
  waitForRequests(count: number): Promise<void> {
    if (this.received.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ count, resolve }));
  }

  /** Answers every held request (with the role it has now) and stops hanging. */
  release(): void {
    this.hanging = false;
    for (const answer of this.#held.splice(0)) answer();
  }

  /** Stops listening and drops every connection (held requests die unanswered). */
  async close(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== 'POST' || req.url !== OBSERVATIONS_PATH) {
      send(res, 404, { error: { code: 'not_found', message: 'not found' } });
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
      observations: { snapshot: { node: string; seq: number } }[];
    };
    const snapshots = body.observations.map((observation) => observation.snapshot);
    this.received.push({
      authorization: req.headers.authorization,
      nodes: snapshots.map((snapshot) => snapshot.node),
      snapshots,
    });
    for (const waiter of this.#waiters.splice(0)) {
      if (this.received.length >= waiter.count) waiter.resolve();
      else this.#waiters.push(waiter);
    }
    // Accepted on arrival, as the controller does before it answers.
    const results = snapshots.map((snapshot) => {
      const key = `${snapshot.node}/${snapshot.seq}`;
      const duplicate = this.#seen.has(key);
      this.#seen.add(key);
      return duplicate
        ? { node: snapshot.node, accepted: false, dropped: 'duplicate' as const }
        : { node: snapshot.node, accepted: true };
    });
    const answer = (): void => {
      if (this.failWith !== undefined) {
        send(res, this.failWith, { error: { code: 'failed', message: 'told to fail' } });
        return;
      }
      send(
        res,
        200,
        this.leading
          ? {
              leader: true,
              identity: this.identity,
              term: this.term,
              results: results.map((result) => ({ ...result, entry: this.entryFor(result.node) })),
            }
          : { leader: false, identity: this.identity, leader_identity: this.leaderIdentity, results },
      );
    };
    if (this.hanging) this.#held.push(answer);
    else answer();
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** Starts fake replicas named `identities`, the first one leading. */
export async function fakeReplicas(...identities: string[]): Promise<FakeReplica[]> {
  const replicas = await Promise.all(identities.map((identity) => new FakeReplica(identity).listen()));
  const [leader] = replicas;
  if (leader) {
    leader.leading = true;
    for (const replica of replicas.slice(1)) replica.leaderIdentity = leader.identity;
  }
  return replicas;
}

/** A ReplicaSource a test changes by hand. */
export class FakeReplicaSource implements ReplicaSource {
  readonly name = 'controllers-fake';
  #replicas: readonly Replica[];
  readonly #listeners = new Listeners();

  constructor(replicas: readonly Replica[] = []) {
    this.#replicas = Object.freeze([...replicas]);
  }

  replicas(): readonly Replica[] {
    return this.#replicas;
  }

  /** Replaces the replicas and tells the subscribers. */
  set(replicas: readonly Replica[]): void {
    this.#replicas = Object.freeze([...replicas]);
    this.#listeners.notify();
  }

  subscribe(listener: () => void): () => void {
    return this.#listeners.subscribe(listener);
  }

  start(signal: AbortSignal): Promise<void> {
    return untilAborted(signal);
  }
}

/** A LeaderSource a test changes by hand. */
export class FakeLeaderSource implements LeaderSource {
  readonly name = 'lease-fake';
  #holder: string | undefined;
  readonly #listeners = new Listeners();

  constructor(holder?: string) {
    this.#holder = holder;
  }

  holder(): string | undefined {
    return this.#holder;
  }

  /** Changes the holder and tells the subscribers. */
  set(holder: string | undefined): void {
    this.#holder = holder;
    this.#listeners.notify();
  }

  subscribe(listener: () => void): () => void {
    return this.#listeners.subscribe(listener);
  }

  start(signal: AbortSignal): Promise<void> {
    return untilAborted(signal);
  }
}

function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}
