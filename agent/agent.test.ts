/**
 * Which node checks an agent runs: a simulated node (the demo's, the benchmarks', most tests')
 * none that touch the machine, so it never probes this machine's gateway or API server.
 */
import { describe, expect, it } from '@jest/globals';
import { FakeClock, createLogger, createRegistry, loadConfig } from '../platform/index.js';
import { createNodeAgent, payloadDecorator } from './agent.js';
import { agentConfigSchema } from './config.js';
import { containerWith, startFakePodResources } from './pod-resources/testing.js';

const log = createLogger({ level: 'silent', component: 'test' });

/** An agent's settings from command-line flags, as cli/agent.ts reads them. */
const config = (flags: Record<string, string>) =>
  loadConfig(agentConfigSchema, {
    flags: {
      node: 'node-a',
      'function-url': 'http://127.0.0.1:1',
      listen: '127.0.0.1:0',
      'inventory-enabled': 'false',
      'events-kmsg': 'false',
      'events-device-nodes': 'false',
      ...flags,
    },
    env: {},
  });

describe('the agent’s node checks', () => {
  it('a simulated node runs only its injected problems: no network probe, whatever the config says', async () => {
    const agent = await createNodeAgent({
      config: config({
        collector: 'sim',
        'sim-enabled': 'true',
        'node-checks-network-enabled': 'true',
      }),
      clock: new FakeClock(),
      log,
      registry: createRegistry('agent'),
    });
    expect(agent.nodeChecks).toEqual(['sim']);
  });

  it('a real node runs the network probe by default, and not when it is turned off', async () => {
    const build = async (network: Record<string, string>) =>
      (
        await createNodeAgent({
          config: config({ collector: 'hdc', ...network }),
          clock: new FakeClock(),
          log,
          registry: createRegistry('agent'),
        })
      ).nodeChecks;
    expect(await build({})).toEqual(['network', 'links', 'edac', 'filesystems']);
    // The kernel check only with its input, the kernel-log follower.
    expect(await build({ 'events-kmsg': 'true' })).toContain('kernel');
    expect(await build({ collector: 'nvidia-smi' })).toContain('nvlink');
    expect(await build({ 'node-checks-network-enabled': 'false' })).not.toContain('network');
  });
});

describe('the agent’s PodResources reader', () => {
  const build = async (flags: Record<string, string>) =>
    createNodeAgent({
      config: config(flags),
      clock: new FakeClock(),
      log,
      registry: createRegistry('agent'),
    });

  it('never runs on a simulated node, whatever the config says', async () => {
    const agent = await build({ collector: 'sim', 'sim-enabled': 'true', 'pod-resources-enabled': 'true' });
    expect(agent.podResources).toBeUndefined();
  });

  it('reads the configured socket on a real node, and not when turned off', async () => {
    const fake = await startFakePodResources(() => ({
      response: {
        pod_resources: [
          { name: 'p', namespace: 'ns', containers: [containerWith('c', { 'nvidia.com/gpu': ['GPU-1'] })] },
        ],
      },
    }));
    try {
      const agent = await build({ collector: 'nvidia-smi', 'pod-resources-socket': fake.socket });
      expect(await agent.podResources?.read()).toBe('ok');
      expect(agent.podResources?.holders()).toEqual([
        { resource_id: 'GPU-1', pods: [{ namespace: 'ns', name: 'p', container: 'c' }] },
      ]);
      expect(
        (await build({ collector: 'nvidia-smi', 'pod-resources-enabled': 'false' })).podResources,
      ).toBeUndefined();
    } finally {
      await fake.close();
    }
  });
});

describe('the payload’s device holders', () => {
  const payload = { family: 'nvidia', gpus: [] } as never;
  const reader = (holders: unknown) => (() => holders) as never;

  it('carries the last good read, [] included, and leaves the field out when not known', () => {
    const held = [{ resource_id: 'GPU-1', pods: [{ namespace: 'ns', name: 'p', container: 'c' }] }];
    expect(payloadDecorator(undefined, undefined, reader(held))(payload)).toEqual({
      family: 'nvidia',
      gpus: [],
      device_holders: held,
    });
    expect(payloadDecorator(undefined, undefined, reader([]))(payload)).toMatchObject({ device_holders: [] });
    expect(payloadDecorator(undefined, undefined, reader(undefined))(payload)).toEqual({
      family: 'nvidia',
      gpus: [],
    });
  });
});
