import { afterEach, describe, expect, it } from '@jest/globals';
import { FakeClock, Registry, createLogger } from '../../platform/index.js';
import type { RawObject } from '../../platform/k8s/index.js';
import { FakeListWatchClient } from '../../platform/k8s/watch/testing.js';
import { createEndpointSliceReplicaSource, replicasOfSlice } from './endpoint-slices.js';

const log = createLogger({ level: 'silent' });

interface EndpointSpec {
  address?: string;
  pod?: string;
  ready?: boolean | null;
}

function slice(
  name: string,
  endpoints: EndpointSpec[],
  options: { ports?: { name?: string; port: number; appProtocol?: string }[]; addressType?: string } = {},
): RawObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name,
      namespace: 'ai-infra',
      labels: { 'kubernetes.io/service-name': 'npu-fault-controller' },
    },
    addressType: options.addressType ?? 'IPv4',
    ports: options.ports ?? [
      { name: 'metrics', port: 9090 },
      { name: 'http', port: 8080 },
    ],
    endpoints: endpoints.map((e) => ({
      addresses: e.address === undefined ? [] : [e.address],
      ...(e.ready === null ? {} : { conditions: { ready: e.ready ?? true } }),
      ...(e.pod === undefined ? {} : { targetRef: { kind: 'Pod', name: e.pod, namespace: 'ai-infra' } }),
    })),
  };
}

describe('replicasOfSlice', () => {
  it.each([
    [
      'ready endpoints on the port named http, identity from targetRef',
      slice('s', [
        { address: '10.0.0.5', pod: 'controller-0' },
        { address: '10.0.0.6', pod: 'controller-1' },
      ]),
      ['controller-0=http://10.0.0.5:8080', 'controller-1=http://10.0.0.6:8080'],
    ],
    ['an unready endpoint is left out', slice('s', [{ address: '10.0.0.5', pod: 'c-0', ready: false }]), []],
    [
      'an unknown readiness counts as ready (as the API says)',
      slice('s', [{ address: '10.0.0.5', pod: 'c-0', ready: null }]),
      ['c-0=http://10.0.0.5:8080'],
    ],
    ['no targetRef: no identity, left out', slice('s', [{ address: '10.0.0.5' }]), []],
    ['no address, left out', slice('s', [{ pod: 'c-0' }]), []],
    [
      'no port named http: nothing',
      slice('s', [{ address: '10.0.0.5', pod: 'c-0' }], { ports: [{ name: 'web', port: 80 }] }),
      [],
    ],
    [
      'IPv6 addresses are bracketed',
      slice('s', [{ address: 'fd00::5', pod: 'c-0' }], { addressType: 'IPv6' }),
      ['c-0=http://[fd00::5]:8080'],
    ],
    [
      'an FQDN slice is ignored',
      slice('s', [{ address: 'x.example', pod: 'c-0' }], { addressType: 'FQDN' }),
      [],
    ],
    [
      'a slice without endpoints',
      { metadata: { name: 's' }, addressType: 'IPv4', ports: [{ name: 'http', port: 1 }] },
      [],
    ],
  ])('%s', (_name, raw, expected) => {
    expect(replicasOfSlice(raw).map((r) => `${r.identity}=${r.url}`)).toEqual(expected);
  });

  it("is https when the port's appProtocol says so, checked against the Service's name", () => {
    const raw = slice('s', [{ address: '10.0.0.5', pod: 'c-0' }], {
      ports: [{ name: 'http', port: 8443, appProtocol: 'https' }],
    });
    expect(replicasOfSlice(raw, 'http', 'npu-fault-controller.ai-infra.svc')).toEqual([
      { identity: 'c-0', url: 'https://10.0.0.5:8443', serverName: 'npu-fault-controller.ai-infra.svc' },
    ]);
    expect(replicasOfSlice(raw)).toEqual([{ identity: 'c-0', url: 'https://10.0.0.5:8443' }]);
  });
});

describe('createEndpointSliceReplicaSource', () => {
  const stops: AbortController[] = [];
  afterEach(() => {
    for (const stop of stops.splice(0)) stop.abort();
  });

  it('follows the slices: replicas appear, turn unready, move, and vanish with their slice', async () => {
    const client = new FakeListWatchClient();
    client.apply(slice('ctl-a', [{ address: '10.0.0.5', pod: 'controller-0' }]));
    const source = createEndpointSliceReplicaSource({
      client,
      clock: new FakeClock(),
      log,
      registry: new Registry(),
    });
    let changes = 0;
    source.subscribe(() => (changes += 1));
    const stop = new AbortController();
    stops.push(stop);
    void source.start(stop.signal);
    await client.waitForWatch(1);
    const now = (): string[] => source.replicas().map((r) => `${r.identity}=${r.url}`);
    expect(now()).toEqual(['controller-0=http://10.0.0.5:8080']);

    client.apply(slice('ctl-b', [{ address: '10.0.0.6', pod: 'controller-1' }]));
    expect(now()).toEqual(['controller-0=http://10.0.0.5:8080', 'controller-1=http://10.0.0.6:8080']);

    client.apply(slice('ctl-b', [{ address: '10.0.0.6', pod: 'controller-1', ready: false }]));
    expect(now()).toEqual(['controller-0=http://10.0.0.5:8080']);

    client.apply(slice('ctl-a', [{ address: '10.0.0.9', pod: 'controller-0' }]));
    expect(now()).toEqual(['controller-0=http://10.0.0.9:8080']);

    client.delete('ai-infra/ctl-a');
    expect(now()).toEqual([]);
    expect(changes).toBe(5);
  });

  it('counts a pod listed by two slices once', async () => {
    const client = new FakeListWatchClient();
    client.apply(slice('one', [{ address: '10.0.0.5', pod: 'controller-0' }]));
    client.apply(slice('two', [{ address: '10.0.0.5', pod: 'controller-0' }]));
    const source = createEndpointSliceReplicaSource({
      client,
      clock: new FakeClock(),
      log,
      registry: new Registry(),
    });
    const stop = new AbortController();
    stops.push(stop);
    void source.start(stop.signal);
    await client.waitForWatch(1);
    expect(source.replicas()).toEqual([{ identity: 'controller-0', url: 'http://10.0.0.5:8080' }]);
  });
});
