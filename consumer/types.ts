/**
 * The consumer SDK's public types: what a follower hands its callbacks, and the small clock
 * it runs on (structurally the platform's Clock, which consumer/ may not import, so tests
 * pass a FakeClock).
 */
import type { PublishedDevice, PublishedDocument, PublishedNode } from '../contracts/index.js';

/** Where the status comes from. */
export type TransportKind = 'file' | 'sse' | 'watch';

/** Time and timers, injected (defaults to the runtime's). */
export interface ConsumerClock {
  /** Wall time, epoch ms. */
  now(): number;
  /** Calls `callback` once after `ms`; returns its cancel function. */
  schedule(ms: number, callback: () => void): () => void;
}

/** The runtime's clock. */
export const realClock: ConsumerClock = {
  now: () => Date.now(),
  schedule(ms, callback) {
    const timer = setTimeout(callback, Math.max(0, ms));
    // A follower's timers alone never keep a process alive.
    timer.unref();
    return () => clearTimeout(timer);
  },
};

/**
 * The health of what is followed (CONTRACT §5.3, contracts/published-health.ts): the worst
 * status counted (`failed`, then `degraded`, then `unknown`), `unobserved` when the node has
 * not reported yet, else `healthy`. A node absent from `nodes` is `unknown`, not healthy,
 * when the document says it left nodes out (`ingest_degraded`, `omitted_nodes`), and the
 * cluster is at least `unknown` then; `failed` while a failed device is carried (below).
 */
export type FollowedHealth = 'healthy' | 'degraded' | 'failed' | 'unknown' | 'unobserved';

/** A failed device and its node. */
export interface FailedDevice {
  node: string;
  device: PublishedDevice;
}

/** What a follower knows at one moment. */
export interface StatusUpdate {
  transport: TransportKind;
  /** The node followed; null when following the whole cluster. */
  node: string | null;
  health: FollowedHealth;
  /** The followed node's entry; null when it is not listed (healthy) or when following the cluster. */
  entry: PublishedNode | null;
  /** The listed nodes in scope (the followed node's entry only, or every listed node). */
  nodes: Record<string, PublishedNode>;
  /**
   * Every failed device in scope: those listed failed, and those last seen failed that the
   * document or the agent can no longer show (left out under the byte budget or an outage, an
   * old agent answer), carried until it shows them again: no device turns healthy because it
   * went unseen.
   */
  failed: FailedDevice[];
  /** The agent's answer is old: it has heard nothing from the ingest function lately (sse only). */
  stale: boolean;
  /** The whole document (file and watch transports); null from the agent stream, which carries one node. */
  document: PublishedDocument | null;
  /** The publishing controller and its term; null when unknown (the agent has no answer yet). */
  publisher: { identity: string; term: number } | null;
  /** The document's `timestamp` (file, watch) or when the agent saw the entry last change (sse). */
  publishedAt: string | null;
  /** When this update was received (epoch ms, the follower's clock). */
  receivedAt: number;
}

/** Why a follower reports an error; it keeps following (and its last good status) after each. */
export type FollowErrorKind = 'version' | 'invalid' | 'missing' | 'connection' | 'http' | 'config';

/** An error a follower reports through onError (never thrown). */
export class FollowError extends Error {
  constructor(
    readonly kind: FollowErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'FollowError';
  }
}
