import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PublishedDevice, PublishedDocument, PublishedNode } from '../contracts/index.js';
import { COMMANDS } from './commands.js';
import { KubeCommandError } from './kube.js';
import { main } from './main.js';
import {
  compareNatural,
  decodeStatus,
  DEFAULT_STALE_AFTER_MS,
  formatAge,
  renderStatus,
  runStatus,
  sortNodes,
  type StatusApi,
  type StatusConfigMap,
  type StatusOptions,
} from './status.js';
import { memoryIO } from './testing.js';

const NOW = Date.parse('2026-12-01T10:00:10.000Z');
const WRITTEN = '2026-12-01T10:00:08.800Z'; // 1.2 s before NOW

function device(
  id: string,
  status: PublishedDevice['status'],
  extra: Partial<PublishedDevice> = {},
): PublishedDevice {
  const reason = status === 'healthy' ? null : status === 'failed' ? 'pcie-link-down' : 'high-temp';
  return {
    id,
    key: `0000:${id}`,
    resource_id: `Ascend910-${id}`,
    kind: 'npu',
    model: '910B2',
    status,
    since: '2026-12-01T10:00:00.000Z',
    reason,
    reasons: reason ? [reason] : ['ecc-error'],
    signals: reason ? [] : ['ecc-error'],
    temperature_c: 88.5,
    power_w: 300.5,
    ecc_errors: 2,
    pcie_link_status: status === 'failed' ? 'down' : 'up',
    ...extra,
  };
}

function node(name: string, npus: PublishedDevice[], agent: PublishedNode['agent'] = 'ok'): PublishedNode {
  const count = (s: PublishedDevice['status']): number => npus.filter((d) => d.status === s).length;
  const unlistedHealthy = 8 - npus.length;
  return {
    node: name,
    observed_at: '2026-12-01T10:00:09.000Z',
    agent,
    summary: {
      total: 8,
      healthy: count('healthy') + unlistedHealthy,
      degraded: count('degraded'),
      failed: count('failed'),
      unknown: count('unknown'),
    },
    npus,
  };
}

function documentOf(nodes: PublishedNode[], extra: Partial<PublishedDocument> = {}): PublishedDocument {
  return {
    version: '3.0',
    timestamp: WRITTEN,
    publisher: { identity: 'npu-fault-controller-7d9f-abc', term: 4 },
    node_count: 120,
    cluster_summary: { total: 960, healthy: 955, degraded: 2, failed: 2, unknown: 1 },
    unobserved: ['node-99'],
    nodes: Object.fromEntries(nodes.map((n) => [n.node, n])),
    ...extra,
  };
}

/** node-10 failed, node-2 failed, node-3 degraded, node-1 unknown, node-4 healthy with a signal. */
const FLEET = documentOf([
  node('node-3', [device('npu1', 'degraded')]),
  node('node-10', [device('npu2', 'degraded'), device('npu10', 'failed'), device('npu1', 'failed')]),
  node('node-4', [device('npu6', 'healthy')]),
  node('node-1', [device('npu0', 'unknown', { reason: 'agent-unreachable' })], 'stale'),
  node('node-2', [device('npu3', 'failed')]),
]);

const plain = {
  output: 'table',
  node: undefined,
  now: NOW,
  color: false,
  staleAfterMs: DEFAULT_STALE_AFTER_MS,
} as const;

function lines(text: string): string[] {
  return text.split('\n');
}

describe('ordering', () => {
  it('sorts names naturally', () => {
    expect(['node-10', 'node-2', 'node-1'].sort(compareNatural)).toEqual(['node-1', 'node-2', 'node-10']);
  });

  it('puts nodes worst first (failed > unknown > degraded > healthy), then by name', () => {
    expect(sortNodes(Object.values(FLEET.nodes)).map((n) => n.node)).toEqual([
      'node-2',
      'node-10',
      'node-1',
      'node-3',
      'node-4',
    ]);
  });
});

describe('renderStatus', () => {
  it('table: summary line, nodes and devices worst first', () => {
    const text = renderStatus(FLEET, plain);
    expect(lines(text)[0]).toBe(
      'publisher npu-fault-controller-7d9f-abc (term 4), written 1.2 s ago; 4 of 120 nodes need attention',
    );
    expect(text).toContain('devices: 960 total, 2 failed, 1 unknown, 2 degraded, 955 healthy\n');
    const nodeLines = lines(text).filter((l) => /^node-\d+\s+(failed|unknown|degraded|healthy)\s/.test(l));
    expect(nodeLines.map((l) => l.split(/\s+/)[0])).toEqual([
      'node-2',
      'node-10',
      'node-1',
      'node-3',
      'node-4',
    ]);
    const deviceLines = lines(text).filter((l) => /^node-\d+\s+npu\d+\s/.test(l));
    expect(deviceLines.map((l) => l.split(/\s+/).slice(0, 3).join(' '))).toEqual([
      'node-2 npu3 failed',
      'node-10 npu1 failed',
      'node-10 npu10 failed',
      'node-10 npu2 degraded',
      'node-1 npu0 unknown',
      'node-3 npu1 degraded',
      'node-4 npu6 healthy',
    ]);
    expect(text).toMatch(/^NODE\s+STATUS\s+AGENT\s+FAILED\s+UNKNOWN\s+DEGRADED\s+DEVICES\s+OBSERVED$/m);
    expect(text).toMatch(/^node-1\s+unknown\s+stale\s+0\s+1\s+0\s+8\s+1\.0 s ago$/m);
    expect(text).toMatch(/^node-2\s+npu3\s+failed\s+10 s ago\s+pcie-link-down$/m);
    expect(text).toContain('unobserved (no snapshot yet): node-99\n');
    expect(text).not.toContain('REASONS');
    expect(text).not.toContain('\x1b[');
  });

  it('wide adds reasons, signals, temperature, power, ECC, link, model and key', () => {
    const text = renderStatus(FLEET, { ...plain, output: 'wide' });
    expect(text).toMatch(
      /^NODE\s+DEVICE\s+STATUS\s+SINCE\s+REASON\s+REASONS\s+SIGNALS\s+TEMP\s+POWER\s+ECC\s+LINK\s+MODEL\s+KEY$/m,
    );
    expect(text).toMatch(
      /^node-2\s+npu3\s+failed\s+10 s ago\s+pcie-link-down\s+pcie-link-down\s+-\s+88\.5°C\s+300\.5W\s+2\s+down\s+910B2\s+0000:npu3$/m,
    );
    expect(text).toMatch(/^node-4\s+npu6\s+healthy\s+.*\s+-\s+ecc-error\s+ecc-error\s+88\.5°C/m);
  });

  it('wide shows null metrics as -', () => {
    const doc = documentOf([
      node('a', [
        device('npu1', 'unknown', {
          temperature_c: null,
          power_w: null,
          ecc_errors: null,
          pcie_link_status: null,
        }),
      ]),
    ]);
    expect(renderStatus(doc, { ...plain, output: 'wide' })).toMatch(
      /^a\s+npu1\s+unknown\s+.*\s+-\s+-\s+-\s+-\s+910B2/m,
    );
  });

  it('json prints the document, and one node with --node', () => {
    expect(JSON.parse(renderStatus(FLEET, { ...plain, output: 'json' }))).toEqual(FLEET);
    expect(JSON.parse(renderStatus(FLEET, { ...plain, output: 'json', node: 'node-2' }))).toEqual(
      FLEET.nodes['node-2'],
    );
  });

  it('a node absent from nodes is healthy (said clearly), an unobserved one unknown', () => {
    expect(JSON.parse(renderStatus(FLEET, { ...plain, output: 'json', node: 'node-50' }))).toEqual({
      node: 'node-50',
      listed: false,
      status: 'healthy',
    });
    expect(JSON.parse(renderStatus(FLEET, { ...plain, output: 'json', node: 'node-99' }))).toMatchObject({
      status: 'unobserved',
    });
    const table = renderStatus(FLEET, { ...plain, node: 'node-50' });
    expect(table).toContain(
      'node node-50: healthy (not listed: every device is healthy, or it has no accelerators)\n',
    );
    expect(renderStatus(FLEET, { ...plain, node: 'node-99' })).toContain(
      'node node-99: no snapshot yet (unobserved)',
    );
  });

  it('--node shows only that node', () => {
    const text = renderStatus(FLEET, { ...plain, node: 'node-10' });
    expect(text).toContain('node-10');
    expect(text).not.toMatch(/^node-2\s/m);
    expect(text).not.toContain('unobserved');
  });

  it('colour only when asked (the TTY decision is made by the caller)', () => {
    const coloured = renderStatus(FLEET, { ...plain, color: true });
    expect(coloured).toContain('\x1b[31;1mfailed');
    expect(coloured).toContain('\x1b[33mdegraded');
    // Columns still line up: padding is applied before the escapes.
    const stripped = coloured.replace(/\x1b\[[0-9;]*m/g, ''); // eslint-disable-line no-control-regex
    expect(stripped).toBe(renderStatus(FLEET, plain));
  });

  it('a healthy cluster says so', () => {
    const text = renderStatus(documentOf([], { unobserved: [] }), plain);
    expect(text).toContain('0 of 120 nodes need attention');
    expect(text).toContain('every observed node is healthy');
  });

  it('ingest_degraded and omitted_nodes are shown, and then no node is called healthy for not being listed', () => {
    const doc = documentOf([], { unobserved: [], ingest_degraded: { stale_nodes: 30 }, omitted_nodes: 2 });
    const text = renderStatus(doc, plain);
    expect(text).toContain('ingest degraded: 30 nodes stale at once');
    expect(text).toContain(
      "2 nodes left out to fit the document's size budget; a node not listed is unknown",
    );
    expect(text).toContain('no node is listed, and the nodes left out are unknown');
    expect(text).not.toContain('every observed node is healthy');
    expect(renderStatus(doc, { ...plain, node: 'gpu-node-9' })).toContain(
      'node gpu-node-9: unknown (not listed',
    );
    expect(JSON.parse(renderStatus(doc, { ...plain, node: 'gpu-node-9', output: 'json' }))).toEqual({
      node: 'gpu-node-9',
      listed: false,
      status: 'unknown',
    });
  });

  it('marks a stale document in the summary', () => {
    expect(lines(renderStatus(FLEET, { ...plain, now: NOW + 60_000 }))[0]).toBe(
      'publisher npu-fault-controller-7d9f-abc (term 4), written 61 s ago; 4 of 120 nodes need attention (STALE)',
    );
  });

  it('formats ages', () => {
    expect([
      formatAge(1234),
      formatAge(-5),
      formatAge(42_000),
      formatAge(600_000),
      formatAge(7_200_000),
    ]).toEqual(['1.2 s', '0.0 s', '42 s', '10 min', '2 h']);
  });
});

describe('decodeStatus', () => {
  const where = 'ai-infra/npu-fault-status-v3';
  const data = (doc: unknown): Record<string, string> => ({ 'fault.json': JSON.stringify(doc) });

  it('reads a valid document, and a 3.x one with fields it does not know', () => {
    expect(decodeStatus(data(FLEET), where)).toEqual({ document: FLEET });
    const newer = decodeStatus(data({ ...FLEET, version: '3.7', future_field: 1 }), where);
    expect('document' in newer && newer.document.version).toBe('3.7');
  });

  it('an unknown major version says which', () => {
    expect(decodeStatus(data({ version: '4.0', whatever: true }), where)).toEqual({
      error: `${where}: unknown major version 4.0 of fault.json; this npu-fault reads 3.x (upgrade npu-fault to read it)`,
    });
  });

  it('invalid JSON, a missing key, and a bad field are one line naming it', () => {
    expect(decodeStatus({ 'fault.json': '{"version": ' }, where)).toMatchObject({
      error: expect.stringMatching(/^ai-infra\/npu-fault-status-v3: fault\.json is not JSON \(/),
    });
    expect(decodeStatus({}, where)).toEqual({ error: `${where} has no fault.json key` });
    const bad = structuredClone(FLEET) as unknown as {
      nodes: Record<string, { npus: { status: string }[] }>;
    };
    (bad.nodes['node-2'] as { npus: { status: string }[] }).npus[0]!.status = 'on-fire';
    const result = decodeStatus(data(bad), where);
    expect(result).toMatchObject({
      error: expect.stringContaining(`${where}: fault.json: nodes.node-2.npus[0].status: `),
    });
    expect(decodeStatus(data({ ...FLEET, version: 3 }), where)).toEqual({
      error: `${where}: fault.json: version: missing or not a string`,
    });
  });
});

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

describe('command line', () => {
  async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
    const io = memoryIO();
    const code = await main(args, io);
    return { code, out: io.out, err: io.err };
  }

  it('is registered and has help', async () => {
    expect(COMMANDS.status?.load).toBeDefined();
    const help = await cli(['status', '--help']);
    expect(help.code).toBe(0);
    expect(help.out).toContain('--fail-stale');
    expect(help.out).toContain('-o, --output table|wide|json');
  });

  it.each([
    [['-o', 'yaml'], "-o must be table, wide or json, not 'yaml'"],
    [['--namespace', 'Bad_NS'], "--namespace 'Bad_NS' is not a namespace name"],
    [['--node', 'UPPER'], "--node 'UPPER' is not a Kubernetes node name"],
    [['--stale-after', 'soon'], '--stale-after must be a duration'],
    [['--bogus'], "unknown option '--bogus'"],
    [['extra'], "unexpected argument 'extra'"],
  ])('%j is a usage error, exit 2', async (args, message) => {
    const result = await cli(['status', ...args]);
    expect(result.code).toBe(2);
    expect(result.err).toContain(message);
    expect(result.err).toMatch(/^npu-fault status: .*; run 'npu-fault status --help'\n$/);
  });

  it('a bad kubeconfig or context is one line, exit 1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'status-kc-'));
    const file = join(dir, 'config');
    writeFileSync(
      file,
      'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\n' +
        'users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
    );
    const result = await cli(['status', '--kubeconfig', file, '--context', 'nope']);
    expect(result).toEqual({
      code: 1,
      out: '',
      err: "npu-fault status: kubeconfig: no context named 'nope'\n",
    });
    const unreachable = await cli(['status', '--kubeconfig', file]);
    expect(unreachable.code).toBe(1);
    expect(unreachable.err).toMatch(
      /^npu-fault status: cannot reach the Kubernetes API at https:\/\/127\.0\.0\.1:1: /,
    );
  });
});
