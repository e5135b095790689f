import { describe, expect, it } from '@jest/globals';
import { ConfigError } from '../../platform/index.js';
import { createStaticReplicaSource, parseControllers } from './replicas.js';

describe('parseControllers', () => {
  it('reads identity=url items, trims them, keeps only the origin, sorts by identity', () => {
    expect(parseControllers(' replica-2=http://10.0.0.6:8080 ,replica-1=http://10.0.0.5:8080/,')).toEqual([
      { identity: 'replica-1', url: 'http://10.0.0.5:8080' },
      { identity: 'replica-2', url: 'http://10.0.0.6:8080' },
    ]);
    expect(parseControllers('a=http://[::1]:9000')).toEqual([{ identity: 'a', url: 'http://[::1]:9000' }]);
  });

  it.each([
    ['nothing', ' , ', '--controllers: expected <identity>=<url>,…, got nothing'],
    ['no =', 'http://10.0.0.5:8080', '--controllers: "http://10.0.0.5:8080": expected <identity>=<url>'],
    ['empty identity', '=http://x:1', '--controllers: "=http://x:1": expected <identity>=<url>'],
    [
      'identity not a pod name',
      'Replica_1=http://x:1',
      '--controllers: "Replica_1=http://x:1": identity "Replica_1" is not a DNS subdomain name (a pod name)',
    ],
    ['not a URL', 'a=10.0.0.5:8080', '--controllers: "a=10.0.0.5:8080": "10.0.0.5:8080" is not a URL'],
    ['not http', 'a=ftp://x:1', '--controllers: "a=ftp://x:1": expected an http(s) URL, got "ftp://x:1"'],
    ['garbage URL', 'a=http://', '--controllers: "a=http://": "http://" is not a URL'],
    ['no port', 'a=http://x', '--controllers: "a=http://x": "http://x" has no port'],
    [
      'a path',
      'a=http://x:1/v1/observations',
      '--controllers: "a=http://x:1/v1/observations": "http://x:1/v1/observations" must have no path, query or fragment (the API path is added)',
    ],
    [
      'credentials',
      'a=http://u:p@x:1',
      '--controllers: "a=http://u:p@x:1": "http://u:p@x:1" must carry no credentials',
    ],
    ['twice', 'a=http://x:1,a=http://y:2', '--controllers: "a=http://y:2": identity "a" is listed twice'],
  ])('refuses %s with a one-line error naming the item', (_name, text, message) => {
    let error: unknown;
    try {
      parseControllers(text);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).lines).toEqual([message]);
  });

  it('reports every bad item, one line each', () => {
    expect(() => parseControllers('a=http://x:1,b,c=ftp://y:2')).toThrow(
      '--controllers: "b": expected <identity>=<url>\n--controllers: "c=ftp://y:2": expected an http(s) URL, got "ftp://y:2"',
    );
  });
});

describe('createStaticReplicaSource', () => {
  it('always lists the same replicas and runs until aborted', async () => {
    const source = createStaticReplicaSource(parseControllers('b=http://x:2,a=http://x:1'));
    expect(source.replicas().map((r) => r.identity)).toEqual(['a', 'b']);
    const stop = new AbortController();
    const running = source.start(stop.signal);
    stop.abort();
    await expect(running).resolves.toBeUndefined();
  });
});
