import { describe, expect, it } from '@jest/globals';
import { mindClusterConfigSchema } from './config.js';

describe('the mindcluster config section', () => {
  it('is off by default, reading kube-system once a second', () => {
    expect(mindClusterConfigSchema.parse({})).toEqual({
      enabled: false,
      namespace: 'kube-system',
      periodMs: 1000,
      maxNodes: 10_000,
      maxSilenceSeconds: 900,
      nodeInfo: { enabled: false, namespace: 'mindx-dl' },
    });
  });
  it.each([
    [{ enabeld: true }, 'enabeld'],
    [{ namespace: 'Kube_System' }, 'namespace'],
    [{ periodMs: 50 }, 'periodMs'],
    [{ maxSilenceSeconds: 0 }, 'maxSilenceSeconds'],
    [{ maxNodes: 0 }, 'maxNodes'],
    [{ nodeInfo: { namespace: 'MindX' } }, 'namespace'],
    [{ nodeInfo: { enabeld: true } }, 'enabeld'],
    [{ nodeInfo: { enabled: true } }, 'needs mindcluster.enabled'],
  ])('refuses %j, naming the field', (input, field) => {
    const result = mindClusterConfigSchema.safeParse(input);
    expect(result.success).toBe(false);
    expect(JSON.stringify(result.error?.issues)).toContain(field);
  });
});
