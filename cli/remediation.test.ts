import { describe, expect, it } from '@jest/globals';
import { ApiException, type V1ConfigMap } from '@kubernetes/client-node';
import {
  BREAKER_CONFIGMAP,
  BREAKER_KEY,
  MAINTENANCE_ANNOTATION,
  REMEDIATION_ANNOTATION,
  decodeBreaker,
  type BreakerState,
  type NodeRecord,
} from '../contracts/index.js';
import { COMMANDS } from './commands.js';
import { KubeCommandError } from './kube.js';
import { main } from './main.js';
import {
  REMEDIATION,
  RESET_ATTEMPTS,
  buildStatus,
  formatStatusTable,
  nameList,
  planReset,
  resetBy,
  runReset,
  runStatus,
  type NodeSummary,
  type RemediationApi,
} from './remediation.js';
import { memoryIO } from './testing.js';

const NOW = '2026-12-01T10:00:00.000Z';

const OPEN: BreakerState = {
  state: 'open',
  openedAt: '2026-12-01T09:00:00.000Z',
  reason: '3 of 10 accelerator nodes unhealthy (more than 10%)',
  unhealthy: ['node-10', 'node-2', 'node-1'],
  acknowledged: ['node-0'],
  closedAt: null,
  closedBy: null,
};

function record(overrides: Partial<NodeRecord> = {}): NodeRecord {
  return {
    phase: 'draining',
    by: 'controller-0',
    term: 3,
    since: '2026-12-01T09:30:00.000Z',
    reason: 'npu3: pcie-link-down',
    devices: ['Ascend910-3'],
    tainted: true,
    drainStartedAt: '2026-12-01T09:31:00.000Z',
    drainFinishedAt: null,
    blocking: [],
    recoveredAt: null,
    releasedAt: null,
    ...overrides,
  };
}

function conflict(): ApiException<string> {
  const body = JSON.stringify({ kind: 'Status', code: 409, reason: 'Conflict', message: 'modified' });
  return new ApiException(409, 'Conflict', body, {});
}

/** The breaker ConfigMap in memory, with the API's optimistic concurrency. */
class FakeRemediation implements RemediationApi {
  configMap: V1ConfigMap | undefined;
  nodes: NodeSummary[] = [];
  readonly replaced: V1ConfigMap[] = [];
  interfere: (() => void) | undefined;
  #version = 100;

  store(text: string | undefined, extra: Record<string, string> = {}): void {
    this.configMap = {
      metadata: {
        name: BREAKER_CONFIGMAP,
        namespace: 'ai-infra',
        resourceVersion: String(++this.#version),
        labels: { keep: 'me' },
        managedFields: [{ manager: 'controller' }],
      },
      data: { ...extra, ...(text === undefined ? {} : { [BREAKER_KEY]: text }) },
    };
  }

  text(): string | undefined {
    return this.configMap?.data?.[BREAKER_KEY];
  }

  async readBreaker(): Promise<V1ConfigMap | undefined> {
    return this.configMap && structuredClone(this.configMap);
  }

  async replaceBreaker(configMap: V1ConfigMap): Promise<void> {
    this.interfere?.();
    this.replaced.push(configMap);
    if (configMap.metadata?.resourceVersion !== this.configMap?.metadata?.resourceVersion) throw conflict();
    this.configMap = {
      ...configMap,
      metadata: { ...configMap.metadata, resourceVersion: String(++this.#version) },
    };
  }

  async listRemediationNodes(): Promise<NodeSummary[]> {
    return this.nodes;
  }
}

async function reset(api: FakeRemediation, options: { by?: string; force?: boolean } = {}) {
  const io = memoryIO();
  const code = await runReset(
    { namespace: 'ai-infra', by: options.by ?? 'alice', force: options.force ?? false },
    { api, io, now: () => NOW },
  );
  return { code, out: io.out, err: io.err };
}

describe('planReset', () => {
  it('closes an open breaker, acknowledging the nodes it counted', () => {
    const plan = planReset(JSON.stringify(OPEN), { now: NOW, by: 'alice', force: false });
    expect(plan).toEqual({
      kind: 'reset',
      before: OPEN,
      after: {
        ...OPEN,
        state: 'closed',
        acknowledged: ['node-0', 'node-1', 'node-10', 'node-2'],
        closedAt: NOW,
        closedBy: 'alice',
      },
    });
  });

  it('leaves a closed or absent breaker alone', () => {
    expect(planReset(undefined, { now: NOW, by: 'a', force: false }).kind).toBe('closed');
    const closed = { ...OPEN, state: 'closed' };
    expect(planReset(JSON.stringify(closed), { now: NOW, by: 'a', force: true }).kind).toBe('closed');
  });

  it('refuses an invalid record naming the key and field, unless forced', () => {
    const bad = JSON.stringify({ ...OPEN, unhealthy: [''] });
    expect(planReset(bad, { now: NOW, by: 'a', force: false })).toEqual({
      kind: 'invalid',
      error: expect.stringMatching(/^npu-fault-remediation-state\/breaker\.json\/unhealthy\/0: /),
    });
    expect(planReset('{', { now: NOW, by: 'a', force: false })).toEqual({
      kind: 'invalid',
      error: 'npu-fault-remediation-state/breaker.json: not JSON',
    });
    const forced = planReset('{', { now: NOW, by: 'bob', force: true });
    expect(forced).toMatchObject({
      kind: 'forced',
      after: { state: 'closed', closedAt: NOW, closedBy: 'bob' },
    });
  });
});

describe('runReset', () => {
  it('updates the record at the version read, keeping the rest of the ConfigMap', async () => {
    const api = new FakeRemediation();
    api.store(JSON.stringify(OPEN), { other: 'x' });
    const version = api.configMap?.metadata?.resourceVersion;
    const { code, out, err } = await reset(api);
    expect([code, err]).toEqual([0, '']);
    expect(out).toBe('breaker closed by alice; 3 nodes acknowledged: node-1, node-2, node-10\n');
    expect(api.replaced).toHaveLength(1);
    expect(api.replaced[0]?.metadata).toEqual({
      name: BREAKER_CONFIGMAP,
      namespace: 'ai-infra',
      resourceVersion: version,
      labels: { keep: 'me' },
    });
    expect(api.configMap?.data?.other).toBe('x');
    expect(decodeBreaker(api.text()).value).toMatchObject({
      state: 'closed',
      closedBy: 'alice',
      closedAt: NOW,
    });
  });

  it('redoes the reset from a fresh read after a 409, and stops if the controller closed it meanwhile', async () => {
    const api = new FakeRemediation();
    api.store(JSON.stringify(OPEN));
    api.interfere = () => {
      api.interfere = undefined;
      api.store(JSON.stringify({ ...OPEN, unhealthy: [...OPEN.unhealthy, 'node-3'] }));
    };
    expect((await reset(api)).out).toBe(
      'breaker closed by alice; 4 nodes acknowledged: node-1, node-2, node-3, node-10\n',
    );
    expect(api.replaced).toHaveLength(2);

    const auto = new FakeRemediation();
    auto.store(JSON.stringify(OPEN));
    auto.interfere = () => {
      auto.interfere = undefined;
      auto.store(JSON.stringify({ ...OPEN, state: 'closed', closedAt: NOW, closedBy: 'auto' }));
    };
    const { code, out } = await reset(auto);
    expect(code).toBe(0);
    expect(out).toBe(`breaker is already closed (last closed ${NOW} by auto); nothing to do\n`);
  });

  it('gives up after repeated conflicts', async () => {
    const api = new FakeRemediation();
    api.store(JSON.stringify(OPEN));
    api.interfere = () => api.store(JSON.stringify(OPEN));
    const { code, err } = await reset(api);
    expect(code).toBe(1);
    expect(api.replaced).toHaveLength(RESET_ATTEMPTS);
    expect(err).toBe(
      `npu-fault remediation reset: ai-infra/${BREAKER_CONFIGMAP} kept changing (${RESET_ATTEMPTS} conflicting updates); try again\n`,
    );
  });

  it('says a closed or absent breaker is closed, writing nothing', async () => {
    const absent = new FakeRemediation();
    expect(await reset(absent)).toEqual({
      code: 0,
      out: `breaker is closed: ai-infra/${BREAKER_CONFIGMAP} does not exist (it has never opened); nothing to do\n`,
      err: '',
    });
    const closed = new FakeRemediation();
    closed.store(undefined);
    expect((await reset(closed)).out).toBe(
      'breaker is already closed (it has never opened); nothing to do\n',
    );
    expect([...absent.replaced, ...closed.replaced]).toEqual([]);
  });

  it('refuses an invalid record in one line offering --force, and --force overwrites it', async () => {
    const api = new FakeRemediation();
    api.store(JSON.stringify({ ...OPEN, state: 'ajar' }));
    const refused = await reset(api);
    expect(refused.code).toBe(1);
    expect(refused.out).toBe('');
    expect(refused.err).toMatch(
      /^npu-fault remediation reset: ai-infra\/npu-fault-remediation-state\/breaker\.json\/state: [^\n]*; --force replaces it with a closed breaker\n$/,
    );
    expect(api.replaced).toEqual([]);
    const forced = await reset(api, { force: true, by: 'bob' });
    expect(forced.code).toBe(0);
    expect(forced.out).toMatch(/^breaker closed by bob: the invalid record was replaced \(.*\/state: /);
    expect(decodeBreaker(api.text()).value).toMatchObject({
      state: 'closed',
      closedBy: 'bob',
      unhealthy: [],
    });
  });

  it('reports an API failure as its one line', async () => {
    const api = new FakeRemediation();
    api.readBreaker = async () => {
      throw new KubeCommandError('forbidden: u may not get configmaps');
    };
    expect((await reset(api)).err).toBe('npu-fault remediation reset: forbidden: u may not get configmaps\n');
  });
});

describe('resetBy and nameList', () => {
  it('takes --by, else the kubeconfig user, else $USER', () => {
    expect(resetBy('carol', 'kube-admin', { USER: 'dave' })).toBe('carol');
    expect(resetBy(undefined, 'kube-admin', { USER: 'dave' })).toBe('kube-admin');
    expect(resetBy(undefined, undefined, { USER: 'dave' })).toBe('dave');
    expect(resetBy(undefined, undefined, {})).toBe('unknown');
    expect(resetBy(undefined, 'x'.repeat(300), {})).toHaveLength(253);
  });

  it('names up to 20 nodes, then counts the rest', () => {
    const names = Array.from({ length: 23 }, (_, i) => `n${i}`);
    expect(nameList(names)).toMatch(/^n0, n1, .*, n19, … \(\+3 more\)$/);
    expect(nameList(['a'])).toBe('a');
  });
});

describe('status', () => {
  const nodes: NodeSummary[] = [
    {
      name: 'node-10',
      annotations: { [REMEDIATION_ANNOTATION]: JSON.stringify(record()) },
      unschedulable: true,
    },
    { name: 'node-9', annotations: { [MAINTENANCE_ANNOTATION]: 'driver upgrade' }, unschedulable: false },
    { name: 'node-2', annotations: { [REMEDIATION_ANNOTATION]: '{"phase":"gone"}' }, unschedulable: true },
  ];

  it('reads the breaker and every annotated node, invalid records shown as such', () => {
    const configMap: V1ConfigMap = { data: { [BREAKER_KEY]: JSON.stringify(OPEN) } };
    const report = buildStatus('ai-infra/x', configMap, nodes);
    expect(report.breaker).toEqual({ configMap: 'ai-infra/x', exists: true, ...OPEN });
    expect(report.nodes.map((n) => [n.name, n.phase, n.maintenance, n.unschedulable])).toEqual([
      ['node-2', 'invalid', null, true],
      ['node-9', null, 'driver upgrade', false],
      ['node-10', 'draining', null, true],
    ]);
    expect(report.nodes[0]?.error).toMatch(/^npu-fault\.io\/remediation\/phase: /);
    expect(buildStatus('w', undefined, []).breaker).toMatchObject({ exists: false, state: 'closed' });
    expect(buildStatus('w', { data: { [BREAKER_KEY]: '[]' } }, []).breaker).toEqual({
      configMap: 'w',
      exists: true,
      state: 'invalid',
      error: expect.stringMatching(/^npu-fault-remediation-state\/breaker\.json: /),
    });
  });

  it('prints a table', () => {
    const configMap: V1ConfigMap = { data: { [BREAKER_KEY]: JSON.stringify(OPEN) } };
    const table = formatStatusTable(buildStatus('ai-infra/npu-fault-remediation-state', configMap, nodes));
    const lines = table.split('\n');
    expect(lines.slice(0, 4)).toEqual([
      `Breaker (ai-infra/npu-fault-remediation-state): OPEN since ${OPEN.openedAt}: ${OPEN.reason}`,
      '  unhealthy: node-10, node-2, node-1',
      '  acknowledged: node-0',
      "  new cordons and drains are stopped; 'npu-fault remediation reset' closes it",
    ]);
    expect(lines.slice(5, 9)).toEqual([
      'NODE     PHASE     SINCE                     CORDONED  MAINTENANCE     REASON',
      // The record's error, cut to 120 characters.
      expect.stringMatching(
        /^node-2 {3}invalid {3}- {25}yes {7}- {15}npu-fault\.io\/remediation\/phase: .{87}…$/,
      ),
      'node-9   -         -                         no        driver upgrade  -',
      'node-10  draining  2026-12-01T09:30:00.000Z  yes       -               npu3: pcie-link-down',
    ]);
    const empty = formatStatusTable(buildStatus('w', undefined, []));
    expect(empty).toBe(
      'Breaker (w): closed, never opened\n\nNo node carries npu-fault.io/remediation or npu-fault.io/maintenance.\n',
    );
  });

  it('prints JSON with -o json, and an API failure as one line', async () => {
    const api = new FakeRemediation();
    api.store(JSON.stringify({ ...OPEN, state: 'closed', closedAt: NOW, closedBy: 'alice' }));
    api.nodes = nodes.slice(0, 1);
    const io = memoryIO();
    expect(await runStatus({ namespace: 'ai-infra', output: 'json' }, { api, io })).toBe(0);
    const parsed = JSON.parse(io.out) as {
      breaker: { state: string };
      nodes: { name: string; since: string }[];
    };
    expect(parsed.breaker.state).toBe('closed');
    expect(parsed.nodes).toEqual([
      {
        name: 'node-10',
        phase: 'draining',
        since: '2026-12-01T09:30:00.000Z',
        reason: 'npu3: pcie-link-down',
        maintenance: null,
        unschedulable: true,
      },
    ]);
    api.listRemediationNodes = async () => {
      throw new KubeCommandError('forbidden: u may not list nodes (cluster-wide)');
    };
    const failed = memoryIO();
    expect(await runStatus({ namespace: 'ai-infra', output: 'table' }, { api, io: failed })).toBe(1);
    expect([failed.out, failed.err]).toEqual([
      '',
      'npu-fault remediation status: forbidden: u may not list nodes (cluster-wide)\n',
    ]);
  });
});

describe('npu-fault remediation: its command line', () => {
  async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
    const io = memoryIO();
    const code = await main(['remediation', ...args], io);
    return { code, out: io.out, err: io.err };
  }

  it('--help lists the subcommands; each subcommand has its own', async () => {
    const group = await cli(['--help']);
    expect(group.code).toBe(0);
    expect(group.out).toMatch(/^Usage: npu-fault remediation reset\|status \[options\]\n/);
    expect(group.out).toMatch(/ {2}reset {3}close an open circuit breaker/);
    const resetHelp = await cli(['reset', '--help']);
    expect(resetHelp.code).toBe(0);
    expect(resetHelp.out).toMatch(/^Usage: npu-fault remediation reset \[--namespace <name>\]/);
    expect(resetHelp.out).toContain('--force');
    expect(resetHelp.out).toContain('--by <name>');
    const statusHelp = await cli(['status', '-h']);
    expect(statusHelp.out).toContain('-o, --output table|json');
    expect(COMMANDS.remediation?.spec.synopsis).toBe(REMEDIATION.synopsis);
    expect(COMMANDS.remediation?.spec.summary).toBe(REMEDIATION.summary);
  });

  it.each([
    [
      [],
      /^npu-fault remediation: missing subcommand \(reset or status\); run 'npu-fault remediation --help'\n$/,
    ],
    [['open'], /^npu-fault remediation: unknown subcommand 'open'; run 'npu-fault remediation --help'\n$/],
    [
      ['reset', 'now'],
      /^npu-fault remediation reset: unexpected argument 'now'; run 'npu-fault remediation reset --help'\n$/,
    ],
    [['reset', '--yes'], /^npu-fault remediation reset: unknown option '--yes'; /],
    [['reset', '--by', ' '], /^npu-fault remediation reset: --by must be a name of 1 to 253 characters; /],
    [['reset', '--namespace', 'AI_infra'], /--namespace 'AI_infra' is not a namespace name/],
    [['status', '-o', 'yaml'], /^npu-fault remediation status: -o must be table or json, not 'yaml'; /],
  ])('bad usage %j exits 2 with one line', async (args, message) => {
    const { code, out, err } = await cli(args);
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toMatch(message);
  });
});
