import { describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { shippedNode } from './shipped-node.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));

describe('shippedNode', () => {
  it("reads the function's node flags from its command, the same in the Deployment and the Knative Service", () => {
    const plain = shippedNode(join(ROOT, 'k8s/functions/base/deployment.yaml'));
    const knative = shippedNode(join(ROOT, 'k8s/functions/knative/service.yaml'));
    expect(plain.nodeArgs).toContain('--min-semi-space-size=16');
    expect(plain.nodeArgs.every((arg) => arg.startsWith('--'))).toBe(true);
    expect(knative).toEqual(plain);
  });

  it('the flags a manifest gives node are ones this node accepts (a misspelt flag exits 9)', async () => {
    const { nodeArgs } = shippedNode(join(ROOT, 'k8s/functions/base/deployment.yaml'));
    await expect(run(process.execPath, [...nodeArgs, '-e', '0'])).resolves.toBeDefined();
    await expect(run(process.execPath, ['--min-semi-space-sise=16', '-e', '0'])).rejects.toMatchObject({
      code: 9,
    });
  });

  it("reads NODE_OPTIONS when there is no command (the controller's Deployment)", () => {
    const controller = shippedNode(join(ROOT, 'k8s/controller/deployment.yaml'));
    expect(controller.nodeOptions).toMatch(/--max-old-space-size=\d+/);
    expect(controller.nodeArgs).toEqual([]);
    expect(controller.mallocEnv).toEqual({});
  });

  it("reads the agent's glibc malloc tuning, which its benchmark runs it under", () => {
    expect(shippedNode(join(ROOT, 'k8s/agent/daemonset.yaml')).mallocEnv).toEqual({
      MALLOC_ARENA_MAX: '2',
      MALLOC_MMAP_THRESHOLD_: '65536',
      MALLOC_TRIM_THRESHOLD_: '131072',
    });
  });

  it('says which file has no workload', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'npu-fault-shipped-')), 'service.yaml');
    writeFileSync(file, 'apiVersion: v1\nkind: Service\nmetadata: {name: x}\n');
    expect(() => shippedNode(file)).toThrow(`${file}: no workload with a container`);
  });
});
