import { describe, expect, it } from '@jest/globals';
import { ApiException } from '@kubernetes/client-node';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UsageError } from './args.js';
import {
  CLEAR,
  mergeClear,
  parseTarget,
  runClear,
  WRITE_ATTEMPTS,
  type ClearApi,
  type ClearOptions,
  type NodeClearState,
  type WaitOutcome,
} from './clear.js';
import { parseDuration } from './args.js';
import { COMMANDS } from './commands.js';
import { describeKubeFailure, KubeCommandError } from './kube.js';
import { main } from './main.js';
import { memoryIO } from './testing.js';

/** What the apiserver answers, as client-node throws it. */
function apiError(code: number, reason: string, message: string): ApiException<string> {
  const body = JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message });
  return new ApiException(code, 'HTTP error', body, { 'content-type': 'application/json' });
}

/**
 * An in-memory Node store with the API's optimistic concurrency: a write at a stale version
 * is a 409. `interfere` runs before a write (another writer getting in first).
 */
class FakeNodes implements ClearApi {
  readonly nodes = new Map<string, NodeClearState>();
  readonly writes: { node: string; value: string; resourceVersion: string }[] = [];
  interfere: ((node: string) => void) | undefined;
  waitResult: (signal: AbortSignal) => Promise<WaitOutcome> = async () => 'removed';
  waitedFrom: string | undefined;
  #version = 10;

  set(node: string, clear: string | undefined): void {
    this.nodes.set(node, { resourceVersion: String(++this.#version), clear });
  }

  async read(node: string): Promise<NodeClearState | undefined> {
    const found = this.nodes.get(node);
    return found && { ...found };
  }

  async write(node: string, value: string, resourceVersion: string): Promise<NodeClearState> {
    this.interfere?.(node);
    this.writes.push({ node, value, resourceVersion });
    const found = this.nodes.get(node);
    if (!found) throw apiError(404, 'NotFound', `nodes "${node}" not found`);
    if (found.resourceVersion !== resourceVersion)
      throw apiError(
        409,
        'Conflict',
        'the object has been modified; please apply your changes to the latest version',
      );
    this.set(node, value);
    return { ...this.nodes.get(node)! };
  }

  async waitRemoved(_node: string, resourceVersion: string, signal: AbortSignal): Promise<WaitOutcome> {
    this.waitedFrom = resourceVersion;
    return await this.waitResult(signal);
  }
}

const options = (target: string, extra: Partial<ClearOptions> = {}): ClearOptions => ({
  target: parseTarget(target),
  wait: false,
  timeoutMs: 60_000,
  ...extra,
});

async function run(api: FakeNodes, opts: ClearOptions, deadline = new AbortController().signal) {
  const io = memoryIO();
  const code = await runClear(opts, { api, io, deadline: () => deadline });
  return { code, out: io.out, err: io.err };
}

describe('parseTarget', () => {
  it.each([
    ['gpu-1', { node: 'gpu-1', device: undefined }],
    ['gpu-1/npu3', { node: 'gpu-1', device: 'npu3' }],
    ['a.b.c/pci:0000:3b:00.0', { node: 'a.b.c', device: 'pci:0000:3b:00.0' }],
    ['gpu-1/all', { node: 'gpu-1', device: undefined }],
    // Only the first slash separates: a key may contain one.
    ['gpu-1/uuid/GPU-1', { node: 'gpu-1', device: 'uuid/GPU-1' }],
  ])('%s', (text, target) => {
    expect(parseTarget(text)).toEqual(target);
  });

  it.each([
    ['/npu3', /missing node name/],
    ['GPU_1', /not a Kubernetes node name/],
    [`${'a'.repeat(254)}`, /not a Kubernetes node name/],
    ['gpu-1/', /missing device after 'gpu-1\/'/],
    ['gpu-1/npu1,npu2', /contains a comma/],
    [`gpu-1/${'x'.repeat(257)}`, /longer than 256 characters/],
    ['gpu-1/ npu3', /surrounding blanks/],
    ['gpu-1/npu\n3', /control characters/],
  ])('refuses %j', (text, message) => {
    expect(() => parseTarget(text)).toThrow(UsageError);
    expect(() => parseTarget(text)).toThrow(message);
  });

  it('accepts a device of exactly 256 characters', () => {
    expect(parseTarget(`n/${'x'.repeat(256)}`).device).toHaveLength(256);
  });
});

describe('parseDuration', () => {
  it.each([
    ['60s', 60_000],
    ['2m', 120_000],
    ['500ms', 500],
    ['1h', 3_600_000],
    ['1.5', 1500],
    ['90', 90_000],
  ])('%s is %d ms', (text, ms) => {
    expect(parseDuration(text, '--timeout')).toBe(ms);
  });

  it.each(['0', '0s', '-1s', 'soon', '1d', '25h', ''])('refuses %j naming the option', (text) => {
    expect(() => parseDuration(text, '--timeout')).toThrow(/^--timeout must be a duration/);
  });
});

describe('mergeClear', () => {
  it.each<[string | undefined, string | undefined, ReturnType<typeof mergeClear>]>([
    [undefined, 'npu3', { value: 'npu3', changed: true }],
    [undefined, undefined, { value: 'all', changed: true }],
    ['npu1', 'npu3', { value: 'npu1,npu3', changed: true }],
    ['npu1, npu3', 'npu3', { value: 'npu1, npu3', changed: false }],
    ['npu1,npu3', undefined, { value: 'all', changed: true }],
    ['all', 'npu3', { value: 'all', changed: false }],
    ['', 'npu3', { value: '', changed: false }],
    [' all ', undefined, { value: ' all ', changed: false }],
    ['npu1,,npu2', 'npu3', { value: 'npu3', changed: true, replaced: 'npu1,,npu2' }],
    ['npu1,,npu2', undefined, { value: 'all', changed: true, replaced: 'npu1,,npu2' }],
  ])('%j + %j', (existing, device, merged) => {
    expect(mergeClear(existing, device)).toEqual(merged);
  });
});

describe('runClear', () => {
  it('sets the annotation at the version read and says what it set', async () => {
    const api = new FakeNodes();
    api.set('gpu-1', undefined);
    const version = api.nodes.get('gpu-1')!.resourceVersion;
    const { code, out, err } = await run(api, options('gpu-1/npu3'));
    expect([code, err]).toEqual([0, '']);
    expect(api.writes).toEqual([{ node: 'gpu-1', value: 'npu3', resourceVersion: version }]);
    expect(out).toBe('clear requested: node gpu-1, device npu3 (npu-fault.io/clear=npu3)\n');
  });

  it('merges into a pending request, and redoes the merge from a fresh read after a 409', async () => {
    const api = new FakeNodes();
    api.set('gpu-1', 'npu1');
    // Another operator's clear lands between our read and our write.
    api.interfere = (node) => {
      api.interfere = undefined;
      api.set(node, 'npu1,npu2');
    };
    const { code, out } = await run(api, options('gpu-1/npu3'));
    expect(code).toBe(0);
    expect(api.writes.map((w) => w.value)).toEqual(['npu1,npu3', 'npu1,npu2,npu3']);
    expect(api.nodes.get('gpu-1')?.clear).toBe('npu1,npu2,npu3');
    expect(out).toContain('(npu-fault.io/clear=npu1,npu2,npu3)');
  });

  it('gives up after repeated conflicts with one line, exit 1', async () => {
    const api = new FakeNodes();
    api.set('gpu-1', undefined);
    api.interfere = (node) => api.set(node, undefined);
    const { code, out, err } = await run(api, options('gpu-1'));
    expect(code).toBe(1);
    expect(api.writes).toHaveLength(WRITE_ATTEMPTS);
    expect(out).toBe('');
    expect(err).toBe(
      `npu-fault clear: node "gpu-1" kept changing (${WRITE_ATTEMPTS} conflicting writes); try again\n`,
    );
  });

  it('writes nothing when the node already asks for it', async () => {
    const api = new FakeNodes();
    api.set('gpu-1', 'all');
    const { code, out } = await run(api, options('gpu-1/npu3'));
    expect(code).toBe(0);
    expect(api.writes).toEqual([]);
    expect(out).toBe('clear already requested: node gpu-1, device npu3 (npu-fault.io/clear=all)\n');
  });

  it('replaces an invalid value and says so', async () => {
    const api = new FakeNodes();
    api.set('gpu-1', 'npu1,,x');
    const { code, out } = await run(api, options('gpu-1'));
    expect(code).toBe(0);
    expect(api.nodes.get('gpu-1')?.clear).toBe('all');
    expect(out).toMatch(/\(npu-fault\.io\/clear=all\); replaced the invalid value "npu1,,x"\n$/);
  });

  it('names a missing node in one line, exit 1 (also when it goes between read and write)', async () => {
    const api = new FakeNodes();
    expect(await run(api, options('gone-1/npu0'))).toEqual({
      code: 1,
      out: '',
      err: 'npu-fault clear: node "gone-1" not found\n',
    });
    api.set('gpu-1', undefined);
    api.interfere = (node) => api.nodes.delete(node);
    expect((await run(api, options('gpu-1'))).err).toBe('npu-fault clear: node "gpu-1" not found\n');
  });

  it('reports an API failure as its one line, exit 1', async () => {
    const api = new FakeNodes();
    api.read = async () => {
      throw new KubeCommandError('forbidden: x may not get nodes "gpu-1" (cluster-wide)');
    };
    const { code, err } = await run(api, options('gpu-1'));
    expect(code).toBe(1);
    expect(err).toBe('npu-fault clear: forbidden: x may not get nodes "gpu-1" (cluster-wide)\n');
  });

  describe('--wait', () => {
    it('waits from the version it wrote until the controller removed the annotation', async () => {
      const api = new FakeNodes();
      api.set('gpu-1', undefined);
      const { code, out } = await run(api, options('gpu-1', { wait: true }));
      expect(code).toBe(0);
      expect(api.waitedFrom).toBe(api.nodes.get('gpu-1')?.resourceVersion);
      expect(out.split('\n')[1]).toBe(
        'cleared: the controller applied the clear on node gpu-1 and published it',
      );
    });

    it('times out with one line naming the annotation, exit 1', async () => {
      const api = new FakeNodes();
      api.set('gpu-1', undefined);
      const deadline = new AbortController();
      let waiting: (() => void) | undefined;
      const started = new Promise<void>((resolve) => (waiting = resolve));
      api.waitResult = (signal) =>
        new Promise((resolve) => {
          signal.addEventListener('abort', () => resolve('timeout'));
          waiting?.();
        });
      const result = run(api, options('gpu-1/npu3', { wait: true, timeoutMs: 1500 }), deadline.signal);
      await started;
      deadline.abort();
      const { code, err } = await result;
      expect(code).toBe(1);
      expect(err).toBe(
        'npu-fault clear: timed out after 1500ms waiting for the controller to apply the clear on node gpu-1 ' +
          '(npu-fault.io/clear is still set; is a controller running and leading?)\n',
      );
    });

    it('fails when the node is deleted while waiting', async () => {
      const api = new FakeNodes();
      api.set('gpu-1', undefined);
      api.waitResult = async () => 'deleted';
      const { code, err } = await run(api, options('gpu-1', { wait: true }));
      expect(code).toBe(1);
      expect(err).toBe('npu-fault clear: node "gpu-1" was deleted while waiting for the controller\n');
    });
  });
});

describe('describeKubeFailure', () => {
  it('names the missing permission of a 403 and the role that grants it', () => {
    const error = apiError(
      403,
      'Forbidden',
      'nodes "gpu-1" is forbidden: User "system:serviceaccount:x:nobody" cannot patch resource "nodes" in API group "" at the cluster scope',
    );
    expect(describeKubeFailure(error, { verb: 'patch', resource: 'nodes', name: 'gpu-1' })).toBe(
      'forbidden: system:serviceaccount:x:nobody may not patch nodes "gpu-1" (cluster-wide); ' +
        "it needs 'patch' on nodes, which the npu-fault-operator role grants (k8s/operator/rbac.yaml)",
    );
    expect(
      describeKubeFailure(apiError(403, 'Forbidden', 'no'), {
        verb: 'update',
        resource: 'configmaps',
        name: 'cm',
        namespace: 'ai-infra',
      }),
    ).toMatch(
      /^forbidden: the kubeconfig user may not update configmaps "cm" \(in namespace ai-infra\); it needs 'update'/,
    );
  });

  it('says what a 401, another status and an unreachable server mean', () => {
    const attempt = { verb: 'get', resource: 'nodes', name: 'n' };
    expect(describeKubeFailure(apiError(401, 'Unauthorized', 'Unauthorized'), attempt)).toBe(
      'unauthorized: the API server refused the kubeconfig\'s credentials (get nodes "n")',
    );
    expect(describeKubeFailure(apiError(500, 'InternalError', 'etcd down\nmore'), attempt)).toBe(
      'get nodes "n": Kubernetes API 500 InternalError: etcd down',
    );
    const refused = Object.assign(new Error('request failed'), {
      cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
    });
    expect(describeKubeFailure(refused, attempt, 'https://127.0.0.1:1')).toBe(
      'cannot reach the Kubernetes API at https://127.0.0.1:1: ECONNREFUSED',
    );
  });
});

describe('npu-fault clear: its command line', () => {
  async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
    const io = memoryIO();
    const code = await main(['clear', ...args], io);
    return { code, out: io.out, err: io.err };
  }

  it('--help shows the usage, the annotation and the permissions', async () => {
    const { code, out } = await cli(['--help']);
    expect(code).toBe(0);
    expect(out).toMatch(/^Usage: npu-fault clear <node>\[\/<device>\] \[--wait\] \[--timeout <duration>\]\n/);
    expect(out).toContain('npu-fault.io/clear');
    expect(out).toContain('--kubeconfig <file>');
    expect(out).toContain('--context <name>');
    expect(out).toContain('k8s/operator/rbac.yaml');
  });

  it('is listed by npu-fault --help as it describes itself', () => {
    expect(COMMANDS.clear?.spec.synopsis).toBe(CLEAR.synopsis);
    expect(COMMANDS.clear?.spec.summary).toBe(CLEAR.summary);
  });

  it.each([
    [[], /missing <node>\[\/<device>\]/],
    [['a', 'b'], /one <node>\[\/<device>\] expected, got 2/],
    [['gpu-1', '--force'], /unknown option '--force'/],
    [['gpu-1/a,b'], /contains a comma/],
    [['gpu-1', '--timeout', '5s'], /--timeout applies only with --wait/],
    [['gpu-1', '--wait', '--timeout', 'soon'], /--timeout must be a duration/],
    [['gpu-1', '--kubeconfig'], /--kubeconfig needs a value/],
  ])('bad usage %j exits 2 with one line pointing at --help', async (args, message) => {
    const { code, out, err } = await cli(args);
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toMatch(message);
    expect(err).toMatch(/^npu-fault clear: [^\n]*; run 'npu-fault clear --help'\n$/);
  });

  it('an unreadable kubeconfig or an unknown context is one line, exit 1', async () => {
    const missing = await cli(['gpu-1', '--kubeconfig', '/nonexistent/kubeconfig']);
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/^npu-fault clear: kubeconfig: [^\n]+\n$/);
    const dir = mkdtempSync(join(tmpdir(), 'npu-fault-clear-'));
    const file = join(dir, 'kubeconfig');
    writeFileSync(
      file,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:1' } }],
        users: [{ name: 'u', user: { token: 't' } }],
        contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'ctx',
      }),
    );
    const context = await cli(['gpu-1', '--kubeconfig', file, '--context', 'other']);
    expect(context).toEqual({
      code: 1,
      out: '',
      err: "npu-fault clear: kubeconfig: no context named 'other'\n",
    });
    // A server that is not there: one line naming it, not a stack trace.
    const unreachable = await cli(['gpu-1', '--kubeconfig', file]);
    expect(unreachable.code).toBe(1);
    expect(unreachable.err).toMatch(
      /^npu-fault clear: cannot reach the Kubernetes API at https:\/\/127\.0\.0\.1:1: [^\n]+\n$/,
    );
  });
});
