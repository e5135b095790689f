import { describe, expect, it } from '@jest/globals';
import { KubeCommandError } from '../kube.js';
import { memoryIO } from '../testing.js';
import { DEFAULT_STALE_AFTER_MS, type StatusOptions } from './args.js';
import type { StatusApi, StatusConfigMap } from './read.js';
import { renderStatus } from './render.js';
import { runStatus } from './run.js';
import { device, documentOf, FLEET, node, NOW, plain } from './testing.js';

/** A StatusApi over a ConfigMap the test changes; follow delivers what `push` sends. */
class FakeStatus implements StatusApi {
  configMap: StatusConfigMap | undefined;
  readFailure: Error | undefined;
  #listener: ((c: StatusConfigMap | undefined) => void) | undefined;
  #following: (() => void) | undefined;
  followedFrom: string | undefined;
  readonly following = new Promise<void>((resolve) => (this.#following = resolve));

  constructor(doc?: unknown) {
    if (doc !== undefined)
      this.configMap = { data: { 'fault.json': JSON.stringify(doc) }, resourceVersion: '7' };
  }

  async read(): Promise<StatusConfigMap | undefined> {
    if (this.readFailure) throw this.readFailure;
    return this.configMap;
  }

  async follow(
    from: string,
    onChange: (c: StatusConfigMap | undefined) => void,
    signal: AbortSignal,
  ): Promise<void> {
    this.followedFrom = from;
    this.#listener = onChange;
    this.#following?.();
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  }

  push(doc: unknown | undefined): void {
    this.#listener?.(
      doc === undefined ? undefined : { data: { 'fault.json': JSON.stringify(doc) }, resourceVersion: '8' },
    );
  }
}

const OPTIONS: StatusOptions = {
  namespace: 'ai-infra',
  node: undefined,
  output: 'table',
  watch: false,
  staleAfterMs: DEFAULT_STALE_AFTER_MS,
  failStale: false,
};

function deps(api: StatusApi, options: { isTTY?: boolean; now?: number; signal?: AbortSignal } = {}) {
  const io = memoryIO({}, { isTTY: options.isTTY ?? false });
  const ticks: (() => void)[] = [];
  return {
    io,
    ticks,
    deps: {
      api,
      io,
      now: () => options.now ?? NOW,
      color: false,
      signal: options.signal ?? new AbortController().signal,
      every: (_ms: number, fn: () => void) => {
        ticks.push(fn);
        return () => void ticks.splice(ticks.indexOf(fn), 1);
      },
    },
  };
}

describe('runStatus', () => {
  it('prints the table, exit 0', async () => {
    const { io, deps: d } = deps(new FakeStatus(FLEET));
    expect(await runStatus(OPTIONS, d)).toBe(0);
    expect(io.out).toBe(renderStatus(FLEET, plain));
    expect(io.err).toBe('');
  });

  it('a missing ConfigMap: one line, exit 1', async () => {
    const { io, deps: d } = deps(new FakeStatus());
    expect(await runStatus(OPTIONS, d)).toBe(1);
    expect(io.err).toBe(
      'npu-fault status: no status published in ai-infra/npu-fault-status-v3: is the controller running?\n',
    );
    expect(io.out).toBe('');
  });

  it('an unknown major or an invalid document: one line, exit 1', async () => {
    const { io, deps: d } = deps(new FakeStatus({ ...FLEET, version: '5.1' }));
    expect(await runStatus(OPTIONS, d)).toBe(1);
    expect(io.err).toMatch(
      /^npu-fault status: ai-infra\/npu-fault-status-v3: unknown major version 5\.1 of fault\.json/,
    );
    const second = deps(new FakeStatus({ ...FLEET, publisher: { identity: '', term: 4 } }));
    expect(await runStatus(OPTIONS, second.deps)).toBe(1);
    expect(second.io.err).toMatch(/: fault\.json: publisher\.identity: /);
  });

  it('an API failure is its one line, exit 1', async () => {
    const api = new FakeStatus(FLEET);
    api.readFailure = new KubeCommandError('forbidden: x may not get configmaps');
    const { io, deps: d } = deps(api);
    expect(await runStatus(OPTIONS, d)).toBe(1);
    expect(io.err).toBe('npu-fault status: forbidden: x may not get configmaps\n');
  });

  it('stale: printed with a warning on stderr, exit 0; exit 1 with --fail-stale', async () => {
    const late = NOW + 30_000;
    const { io, deps: d } = deps(new FakeStatus(FLEET), { now: late });
    expect(await runStatus(OPTIONS, d)).toBe(0);
    expect(io.out).toContain('(STALE)');
    expect(io.err).toBe(
      'npu-fault status: warning: the status is stale: written 31 s ago (over 10 s) by npu-fault-controller-7d9f-abc; is a controller running and leading?\n',
    );
    const strict = deps(new FakeStatus(FLEET), { now: late });
    expect(await runStatus({ ...OPTIONS, failStale: true }, strict.deps)).toBe(1);
    expect(strict.io.out).toContain('(STALE)');
    const fresh = deps(new FakeStatus(FLEET));
    expect(await runStatus({ ...OPTIONS, failStale: true }, fresh.deps)).toBe(0);
  });

  it('--watch on a pipe appends a rendering per change, not per heartbeat; ends on the signal', async () => {
    const api = new FakeStatus(FLEET);
    const stop = new AbortController();
    const { io, deps: d } = deps(api, { signal: stop.signal });
    const running = runStatus({ ...OPTIONS, watch: true }, d);
    await api.following;
    expect(api.followedFrom).toBe('7');
    expect(io.out).toBe(renderStatus(FLEET, plain));
    api.push({ ...FLEET, timestamp: '2026-12-01T10:00:09.800Z' }); // heartbeat only
    expect(io.out).toBe(renderStatus(FLEET, plain));
    const changed = documentOf([node('node-5', [device('npu1', 'failed')])]);
    api.push(changed);
    expect(io.out).toBe(`${renderStatus(FLEET, plain)}\n${renderStatus(changed, plain)}`);
    api.push(undefined);
    expect(io.err).toBe(
      'npu-fault status: no status published in ai-infra/npu-fault-status-v3: is the controller running?\n',
    );
    stop.abort();
    expect(await running).toBe(0);
    expect(io.out).not.toContain('\x1b[');
  });

  it('--watch on a terminal clears and redraws at each change and each tick; warns once when stale', async () => {
    const api = new FakeStatus(FLEET);
    const stop = new AbortController();
    let now = NOW;
    const { io, ticks, deps: d } = deps(api, { isTTY: true, signal: stop.signal });
    d.now = () => now;
    const running = runStatus({ ...OPTIONS, watch: true }, d);
    await api.following;
    expect(io.out.startsWith('\x1b[H\x1b[2J')).toBe(true);
    api.push({ ...FLEET, timestamp: '2026-12-01T10:00:09.800Z' });
    expect(io.out.split('\x1b[H\x1b[2J')).toHaveLength(3);
    now += 20_000;
    ticks.forEach((tick) => tick());
    ticks.forEach((tick) => tick());
    expect(io.out.split('\x1b[H\x1b[2J')).toHaveLength(5);
    expect(io.err.match(/stale/g)).toHaveLength(1);
    stop.abort();
    expect(await running).toBe(0);
    expect(ticks).toHaveLength(0);
  });

  it('--watch: a missing ConfigMap at the start is exit 1', async () => {
    const { io, deps: d } = deps(new FakeStatus());
    expect(await runStatus({ ...OPTIONS, watch: true }, d)).toBe(1);
    expect(io.err).toContain('no status published');
  });
});
